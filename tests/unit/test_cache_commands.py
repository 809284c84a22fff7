"""`narrate cache info|prune` and the cache's eviction rules, in this process: sizes, what a prune
keeps, its refusals."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest
from helpers.cli import invoke
from helpers.ops import one_error_line
from narrate.jobs.book import cache
from narrate.jobs.book.checkpoints import CheckpointStore
from narrate.jobs.errors import BadInput

DAY = 86400


def fill(root, used: list[float]) -> list[str]:
    """Checkpoints of one size, last used at the given epoch times; their keys in that order."""
    store = CheckpointStore(root)
    keys = [f"{i:02d}" * 32 for i in range(len(used))]
    for key, t in zip(keys, used, strict=True):
        store.save(key, np.zeros(1920, dtype=np.float32), frames=1, runaway=False, takes=1)
        os.utime(store.path(key), (t, t))
    return keys


def test_cache_info_and_prune_commands(env, home):
    root = home / "checkpoints"
    now = time.time()
    keys = fill(root, [now - 10 * DAY, now - 5 * DAY, now - 2 * DAY, now - 60, now])
    size = CheckpointStore(root).path(keys[0]).stat().st_size
    (root / keys[0][:2] / f".{keys[0][:16]}.x.tmp").write_bytes(b"partial")  # a writer's temp: not counted

    text = invoke(env, "cache", "info")
    assert text.returncode == 0 and f"path: {root}" in text.stdout and "sentences: 5" in text.stdout
    assert "cap: 5.0 GB (NARRATE_CACHE_MAX_GB)" in text.stdout
    info = json.loads(invoke(env, "cache", "info", "--json").stdout)
    assert (info["count"], info["bytes"], info["cap_bytes"]) == (5, 5 * size, 5 * 10**9)
    assert info["oldest_use"] == pytest.approx(now - 10 * DAY) and info["newest_use"] == pytest.approx(now)

    old = invoke(env, "cache", "prune", "--older-than", "3")
    assert old.returncode == 0 and old.stdout.startswith("removed 2 sentences"), old.stdout
    assert {p.stem for p in root.rglob("*.seg")} == set(keys[2:])
    to = json.loads(invoke(env, "cache", "prune", "--to", f"{size + 1}B", "--json").stdout)
    assert (to["count"], to["left_count"], to["left_bytes"]) == (2, 1, size)
    assert {p.stem for p in root.rglob("*.seg")} == {keys[4]}  # the most recently used stays
    assert "not a size" in one_error_line(invoke(env, "cache", "prune", "--to", "lots"))
    assert "exclude each other" in one_error_line(invoke(env, "cache", "prune", "--all", "--to", "1GB"))
    everything = invoke(env, "cache", "prune", "--all")
    assert everything.stdout.startswith("removed 1 sentence (4.0 kB); 0 left (0 B)"), everything.stdout
    assert not list(root.rglob("*.seg")) and len(list(root.rglob("*.tmp"))) == 1
    bad = one_error_line(invoke(dict(env, NARRATE_CACHE_MAX_GB="-1"), "cache", "info"))
    assert "NARRATE_CACHE_MAX_GB" in bad


def test_prune_keeps_what_a_job_keeps_and_what_was_used_meanwhile(tmp_path):
    now = time.time()
    keys = fill(tmp_path, [now - 40, now - 30, now - 20, now - 10])
    store = CheckpointStore(tmp_path)
    size = store.path(keys[0]).stat().st_size
    got = cache.after_job(store, [keys[0]], cap=2 * size)  # keys[0] is the job's own: never evicted
    assert (got.count, got.left_count) == (2, 2)
    assert {p.stem for p in tmp_path.rglob("*.seg")} == {keys[0], keys[3]}
    listed = cache.entries(tmp_path)
    assert store.load(keys[3]) is not None  # a hit marks it used after the evictor listed it
    assert cache._remove(next(x for x in listed if x.path.stem == keys[3])) is False and store.has(keys[3])
    assert cache.after_job(store, keys, cap=0).count == 4 and cache.entries(tmp_path) == []


@pytest.mark.parametrize(
    "raw,want", [("500MB", 500 * 10**6), ("1.5G", 1_500_000_000), ("2GiB", 2 * 2**30), ("0", 0), ("123", 123)]
)
def test_parse_size(raw, want):
    assert cache.parse_size(raw) == want


def test_parse_size_refuses_nonsense():
    with pytest.raises(BadInput, match="not a size"):
        cache.parse_size("-3GB")
