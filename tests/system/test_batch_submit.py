"""`narrate submit a.txt b.md c.txt`: one job each, every file checked before any is enqueued,
outputs named after their documents in the -o directory, JSON lines."""

from __future__ import annotations

import json
import threading

from helpers.books import write_docs
from helpers.fake import fake_env, synthesized
from helpers.ops import submit_json
from helpers.procs import narrate, start_worker, stop_worker, wait_for_job


def test_a_batch_is_one_job_per_document_named_after_it(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    docs = write_docs(home / "in", {"a.txt": 5, "b.md": 3, "c.txt": 2})
    out = home / "out" / "books"  # does not exist yet: made by the worker
    jobs = submit_json(e, docs, voice_wav, "-o", str(out), "--format", "m4b")
    assert [j["document"] for j in jobs] == ["a.txt", "b.md", "c.txt"]
    assert [j["output"] for j in jobs] == [str(out / f"{n}.m4b") for n in "abc"]
    assert [j["sentences"] for j in jobs] == [5, 3, 2] and {j["status"] for j in jobs} == {"queued"}
    assert len({j["id"] for j in jobs}) == 3 and external_redis.llen("rq:queue:narrate") == 3
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    for j in jobs:
        assert wait_for_job(j["id"])["status"] == "finished"
    assert sorted(p.name for p in out.iterdir()) == ["a.m4b", "b.m4b", "c.m4b"]
    assert len(synthesized(home)) == 10


def test_the_same_batch_submitted_twice_at_once_gives_one_job_each(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    docs = write_docs(home / "in", {"a.txt": 3, "b.txt": 3, "c.txt": 3})
    args = ["submit", *map(str, docs), "--voice", str(voice_wav), "-o", str(home / "out"), "--json"]
    results: list = [None, None]

    def go(k: int) -> None:
        results[k] = narrate(e, *args)

    threads = [threading.Thread(target=go, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    runs = [[json.loads(line) for line in r.stdout.splitlines()] for r in results]
    assert [j["id"] for j in runs[0]] == [j["id"] for j in runs[1]]
    for first, second in zip(*runs, strict=True):  # each job: new for one submit, a duplicate for the other
        assert sorted([str(first["duplicate"]), str(second["duplicate"])]) == ["None", "queued"]
    assert external_redis.llen("rq:queue:narrate") == 3
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert len(synthesized(home)) == 9  # every sentence once


def test_wait_follows_every_job_of_a_batch(env, home, voice_wav, external_redis):
    """`--wait` prints each output (or error) and exits 0 only when every job finished."""
    e = fake_env(env, home, NARRATE_FAKE_FAIL_ON="BROKEN", NARRATE_MAX_ATTEMPTS="1")
    good, other = write_docs(home / "in", {"good.txt": 2, "other.txt": 2})
    worker = start_worker(e)
    try:
        ok = narrate(e, "submit", str(good), str(other), "--voice", str(voice_wav), "-o", str(home / "out"), "--wait")
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout.splitlines()[-2:] == [str(home / "out" / "good.mp3"), str(home / "out" / "other.mp3")]
        bad = home / "in" / "bad.txt"
        bad.write_text("This is BROKEN.")
        mixed = narrate(
            e, "submit", str(bad), str(good), "--voice", str(voice_wav), "-o", str(home / "out" / "second"), "--wait"
        )
    finally:
        stop_worker(worker)
    assert mixed.returncode == 1 and mixed.stdout, (mixed.stdout, mixed.stderr)
    assert mixed.stdout.splitlines()[-1] == str(home / "out" / "second" / "good.mp3"), (mixed.stdout, mixed.stderr)
    assert "failed: SynthesisError" in mixed.stderr and "Error: 1 of 2 jobs did not finish" in mixed.stderr
