"""The sentence cache: finished sentences outlive their job, so an edited book synthesizes only what
changed; a size cap evicts the least recently used; `narrate cache info|prune`; a checkpoint evicted
under a running job is synthesized again while it stitches. Real worker processes, fake engine."""

from __future__ import annotations

import json
import subprocess

from helpers.books import book, write_docs
from helpers.fake import fake_env, synthesized
from helpers.faults import golden
from helpers.ops import job_meta, submit
from helpers.procs import NARRATE, narrate, start_worker, stop_worker, wait_for_job, wait_until
from narrate.jobs.book import cache
from narrate.jobs.book.checkpoints import CheckpointStore

N = 12


def segs(home) -> set[str]:
    return {p.stem for p in (home / "checkpoints").rglob("*.seg")}


def burst(e) -> None:
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr


def finished(job_id: str) -> dict:
    st = wait_for_job(job_id, timeout=60)
    assert st["status"] == "finished", st
    return st


def run_job(e, doc, voice, out) -> dict:
    job_id = submit(e, doc, voice, out)
    burst(e)
    return finished(job_id)


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
    assert f"first takes: 1 synthesized, {N - 1} reused from the cache" in text.stdout, text.stdout
    info = json.loads(narrate(e, "cache", "info", "--json").stdout)
    assert info["count"] == N + 1 and info["path"] == str(home / "checkpoints")


def test_the_cap_evicts_the_least_recently_used_first(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=1)
    a, b, c = write_docs(home, {"a.txt": 3, "b.txt": 3, "c.txt": 3})
    worker = start_worker(e, "--quiet")  # one worker for the three jobs without a cap (a burst worker for c's)
    try:
        finished(submit(e, a, voice_wav, home / "out" / "a.wav"))
        keys_a = segs(home)
        finished(submit(e, b, voice_wav, home / "out" / "b.wav"))
        keys_b = segs(home) - keys_a
        sizes = {p.stat().st_size for p in (home / "checkpoints").rglob("*.seg")}
        assert len(sizes) == 1 and len(keys_a) == len(keys_b) == 3  # the fake engine's sentences: one size
        finished(submit(e, a, voice_wav, home / "out" / "a-again.wav"))  # uses a's sentences: b's are the oldest
    finally:
        stop_worker(worker)
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
    worker = subprocess.Popen([*NARRATE, "worker", "--burst", "--quiet"], env=e)
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
