"""The sentence cache: finished sentences outlive their job, so an edited book synthesizes only what
changed; a size cap evicts the least recently used; `narrate cache info|prune`; a checkpoint evicted
under a running job is synthesized again while it stitches. Real worker processes, fake engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import narrate, wait_for_job, wait_until
from faults import book, fake_env, golden, job_meta, submit, synthesized
from narrate.jobs.book import cache
from narrate.jobs.book.checkpoints import CheckpointStore
from narrate.jobs.errors import BadInput
from opskit import one_error_line, write_docs

N = 12
DAY = 86400


def segs(home) -> set[str]:
    return {p.stem for p in (home / "checkpoints").rglob("*.seg")}


def burst(e) -> None:
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr


def run_job(e, doc, voice, out) -> dict:
    job_id = submit(e, doc, voice, out)
    burst(e)
    st = wait_for_job(job_id, timeout=60)
    assert st["status"] == "finished", st
    return st


def test_an_edited_book_synthesizes_only_the_changed_sentence(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=1)
    edited = book(N, marker="Edited:")  # sentence 7 changes
    want = golden(e, home, voice_wav, edited)
    doc, out = home / "book.txt", home / "out" / "book.wav"
    doc.write_text(book(N))
    first = run_job(e, doc, voice_wav, out)
    assert (first["result"]["synthesized"], first["result"]["reused"]) == (N, 0)
    assert len(segs(home)) == N  # kept after the job: the cache
    (home / "fake.log").unlink()

    doc.write_text(edited)
    st = run_job(e, doc, voice_wav, out)
    assert st["id"] != first["id"]  # a new document, a new job
    assert [i for i, _ in synthesized(home)] == [7]
    assert (st["result"]["synthesized"], st["result"]["reused"]) == (1, N - 1)
    assert out.read_bytes() == want
    text = narrate(e, "status", st["id"])
    assert f"sentences: 1 synthesized, {N - 1} reused from the cache" in text.stdout, text.stdout
    info = json.loads(narrate(e, "cache", "info", "--json").stdout)
    assert info["count"] == N + 1 and info["path"] == str(home / "checkpoints")


def test_the_cap_evicts_the_least_recently_used_first(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=1)
    a, b, c = write_docs(home, {"a.txt": 3, "b.txt": 3, "c.txt": 3})
    run_job(e, a, voice_wav, home / "out" / "a.wav")
    keys_a = segs(home)
    run_job(e, b, voice_wav, home / "out" / "b.wav")
    keys_b = segs(home) - keys_a
    sizes = {p.stat().st_size for p in (home / "checkpoints").rglob("*.seg")}
    assert len(sizes) == 1 and len(keys_a) == len(keys_b) == 3  # the fake engine's sentences: one size
    run_job(e, a, voice_wav, home / "out" / "a-again.wav")  # uses a's sentences: b's are now the oldest
    assert len(synthesized(home)) == 6  # nothing synthesized again
    cap = 6 * sizes.pop()
    st = run_job(dict(e, NARRATE_CACHE_MAX_GB=str(cap / 1e9)), c, voice_wav, home / "out" / "c.wav")
    keys_c = set(segs(home)) - keys_a - keys_b
    assert len(keys_c) == 3 and st["result"]["synthesized"] == 3
    assert segs(home) == keys_a | keys_c  # b's went, the running job's own and the recently used stayed
    assert cache.info(home / "checkpoints", cap).bytes <= cap


def test_cap_zero_deletes_a_jobs_checkpoints(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=1, NARRATE_CACHE_MAX_GB="0")
    [a] = write_docs(home, {"a.txt": 3})
    run_job(e, a, voice_wav, home / "out" / "a.wav")
    assert segs(home) == set()


def test_a_checkpoint_evicted_between_planning_and_stitching_is_synthesized_again(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=400)
    n = 8
    edited = book(n, marker="Edited:")
    want = golden(dict(e, NARRATE_FAKE_DELAY_MS="1"), home, voice_wav, edited)
    doc, out = home / "book.txt", home / "out" / "book.wav"
    doc.write_text(book(n))
    run_job(dict(e, NARRATE_FAKE_DELAY_MS="1"), doc, voice_wav, out)
    cached = segs(home)
    (home / "fake.log").unlink()

    doc.write_text(edited)
    job_id = submit(e, doc, voice_wav, out)
    worker = subprocess.Popen([sys.executable, "-m", "narrate.cli.main", "worker", "--burst", "--quiet"], env=e)
    try:  # planned: 7 sentences from the cache, sentence 7 in flight; evict those 7 now
        wait_until(
            lambda: job_meta(external_redis, job_id).get("in_flight") == [7], 30, "the edited sentence in flight"
        )
        assert synthesized(home) == []
        store = CheckpointStore(home / "checkpoints")
        for key in cached:
            store.path(key).unlink()
        assert worker.wait(timeout=60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
    st = wait_for_job(job_id, timeout=30)
    assert st["status"] == "finished", st
    assert [i for i, _ in synthesized(home)] == [7, 0, 1, 2, 3, 4, 5, 6]
    assert (st["result"]["synthesized"], st["result"]["reused"]) == (n, 0)
    assert st["progress"]["done"] == st["progress"]["total"] == n
    assert out.read_bytes() == want  # complete and correct


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

    text = narrate(env, "cache", "info")
    assert text.returncode == 0 and f"path: {root}" in text.stdout and "sentences: 5" in text.stdout
    assert "cap: 5.0 GB (NARRATE_CACHE_MAX_GB)" in text.stdout
    info = json.loads(narrate(env, "cache", "info", "--json").stdout)
    assert (info["count"], info["bytes"], info["cap_bytes"]) == (5, 5 * size, 5 * 10**9)
    assert info["oldest_use"] == pytest.approx(now - 10 * DAY) and info["newest_use"] == pytest.approx(now)

    old = narrate(env, "cache", "prune", "--older-than", "3")
    assert old.returncode == 0 and old.stdout.startswith("removed 2 sentences"), old.stdout
    assert {p.stem for p in root.rglob("*.seg")} == set(keys[2:])
    to = json.loads(narrate(env, "cache", "prune", "--to", f"{size + 1}B", "--json").stdout)
    assert (to["count"], to["left_count"], to["left_bytes"]) == (2, 1, size)
    assert {p.stem for p in root.rglob("*.seg")} == {keys[4]}  # the most recently used stays
    assert "not a size" in one_error_line(narrate(env, "cache", "prune", "--to", "lots"))
    assert "exclude each other" in one_error_line(narrate(env, "cache", "prune", "--all", "--to", "1GB"))
    everything = narrate(env, "cache", "prune", "--all")
    assert everything.stdout.startswith("removed 1 sentence (4.0 kB); 0 left (0 B)"), everything.stdout
    assert not list(root.rglob("*.seg")) and len(list(root.rglob("*.tmp"))) == 1
    bad = one_error_line(narrate(dict(env, NARRATE_CACHE_MAX_GB="-1"), "cache", "info"))
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
