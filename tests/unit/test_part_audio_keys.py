"""A fanned-out book's part audio comes from Redis, which anyone who can write to the shared server
controls: a sentence's checkpoint key becomes a file path, so a key checkpoint_key cannot have made
is refused where it becomes a path, and the chunk's other sentences still arrive."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from narrate.jobs.book.checkpoints import BadKey, CheckpointStore, checkpoint_key
from narrate.jobs.fanout import partaudio
from narrate.jobs.ffmpeg import ffmpeg_exe


def _chunk(entries: list, samples: np.ndarray) -> bytes:
    flac = partaudio.encode(ffmpeg_exe(None), samples)
    return json.dumps({"sentences": entries}).encode() + b"\n" + flac


def _entry(index: int, key: str, ints: np.ndarray) -> list:
    import hashlib

    return [index, key, int(ints.size), 3, False, 1, hashlib.sha256(ints.tobytes()).hexdigest()]


@pytest.mark.parametrize(
    "bad",
    [
        "0123456789abcdef/" + "../" * 12 + "tmp/narrate-escaped",  # 16 hex, then out of the store
        "../" * 12 + "tmp/narrate-escaped",  # a '/' in the first characters
        "A" * 64,  # not lowercase hex
        "ab" * 31,  # too short
        7,  # not a string
    ],
)
def test_a_forged_key_writes_nothing_and_the_rest_arrives(tmp_path, external_redis, bad):
    rng = np.random.default_rng(0)
    good = [rng.integers(-3000, 3000, 480, dtype=np.int16) for _ in range(3)]
    keys = [checkpoint_key(f"sentence {i}", "v", "m", "bf16", i, 10) for i in range(3)]
    entries = [_entry(0, keys[0], good[0]), _entry(1, keys[1], good[1])]
    forged = [_entry(2, bad if isinstance(bad, str) else keys[2], good[2])]
    if not isinstance(bad, str):
        forged[0][1] = bad
    book = "book1"
    external_redis.hset(partaudio.audio_key(book), "c0", _chunk(entries, np.concatenate(good[:2])))
    external_redis.hset(
        partaudio.audio_key(book),
        "c1",
        _chunk(forged + [_entry(3, keys[2], good[2])], np.concatenate([good[2], good[2]])),
    )
    store = CheckpointStore(tmp_path / "store")
    escaped = Path("/tmp")  # where the forged keys point (../ x12 from the store, then tmp/)
    for p in escaped.glob("narrate-escaped*"):
        p.unlink()
    n = partaudio.download(external_redis, book, store, ffmpeg_exe(None))
    assert n == 2  # the good chunk's two sentences; the forged chunk is skipped from its bad entry on
    assert store.load(keys[0]) is not None and store.load(keys[1]) is not None
    assert list(escaped.glob("narrate-escaped*")) == []
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(store.root)]
    assert outside == [], outside


def test_the_store_refuses_a_key_it_cannot_have_made(tmp_path):
    store = CheckpointStore(tmp_path)
    with pytest.raises(BadKey):
        store.path("../../etc/passwd" + "0" * 48)
    assert store.path("ab" * 32) == tmp_path / "ab" / f"{'ab' * 32}.seg"
