"""A sentence checkpoint with a flipped byte, or in the first format without a checksum, is not
trusted."""

from __future__ import annotations

import numpy as np
from narrate.jobs.book.checkpoints import CheckpointStore

KEY = "ab" * 32


def flip_body_byte(path, back: int = 100) -> None:
    """Invert one byte near the end of a checkpoint: always in the PCM body, never the header."""
    raw = bytearray(path.read_bytes())
    raw[-back] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_load_refuses_a_flipped_byte(tmp_path):
    store = CheckpointStore(tmp_path)
    store.save(KEY, np.linspace(-1, 1, 1920, dtype=np.float32), frames=1, runaway=False, takes=1)
    assert store.verify(KEY) and store.load(KEY).pcm.size == 1920
    flip_body_byte(store.path(KEY))
    assert store.has(KEY)  # the header and the length still look right
    assert store.load(KEY) is None and not store.verify(KEY)


def test_a_checkpoint_without_a_checksum_counts_as_missing(tmp_path):
    """A file in the first format (no checksum in its header) is redone, not trusted."""
    store = CheckpointStore(tmp_path)
    path = store.path(KEY)
    path.parent.mkdir(parents=True)
    body = np.zeros(1920, dtype="<i2").tobytes()
    path.write_bytes(b'NRS1\n{"samples": 1920, "frames": 1, "runaway": false, "attempts": 1}\n' + body)
    assert not store.has(KEY) and not store.verify(KEY) and store.load(KEY) is None
