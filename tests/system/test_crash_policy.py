"""What a job that crashes, raises or hangs its worker ends as: retried, then failed naming the sentences."""

from __future__ import annotations

from helpers.books import book
from helpers.fake import fake_env, synthesized
from helpers.faults import leftovers
from helpers.ops import job_meta, submit, submit_json
from helpers.procs import narrate, start_worker, stop_worker, wait_for_job
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings


def test_poison_pill_fails_after_three_crashes_and_others_finish(env, home, voice_wav):
    """A sentence that kills the worker every time fails its job after 3 attempts, naming it."""
    e = fake_env(env, home, NARRATE_FAKE_ABORT_ON="POISON")
    docs = []
    for name, marker in (("a", ""), ("b", "POISON"), ("c", "")):
        docs.append(home / f"{name}.txt")
        docs[-1].write_text(book(12, marker))
    ids = [j["id"] for j in submit_json(e, docs, voice_wav, "-o", str(home / "out"))]  # one submit, in this order
    supervisor = start_worker(e)
    try:
        results = [wait_for_job(i, timeout=120) for i in ids]
    finally:
        stop_worker(supervisor)
    assert [r["status"] for r in results] == ["finished", "failed", "finished"]
    err = results[1]["error"]
    assert "crashed the worker 3 times on sentences" in err and "POISON" in err, err
    poisoned = [i for i, _ in synthesized(home) if i == 7]
    assert len(poisoned) <= 3 + 2  # 3 crashing attempts on 'b' (+ sentence 7 of a and c)


def test_exception_on_a_sentence_fails_after_three_attempts(env, home, voice_wav):
    """A deterministic exception: RQ retries twice, then the job fails naming the sentence."""
    e = fake_env(env, home, NARRATE_FAKE_FAIL_ON="BROKEN")
    doc = home / "bad.txt"
    doc.write_text(book(10, "BROKEN"))
    job_id = submit(e, doc, voice_wav, home / "out" / "bad.wav")
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr
    st = wait_for_job(job_id)
    assert st["status"] == "failed"
    assert "synthesis failed on sentence(s)" in st["error"] and "BROKEN" in st["error"], st["error"]
    with Connection(Settings.from_env()) as conn:
        assert job_meta(conn.redis, job_id)["attempts"] == 3
    # Sentences before the bad batch were checkpointed once and never redone.
    counts = {}
    for i, _ in synthesized(home):
        counts[i] = counts.get(i, 0) + 1
    assert all(counts[i] == 1 for i in range(4))
    assert not (home / "out" / "bad.wav").exists() and leftovers(home) == []


def test_hang_in_native_code_is_killed_by_the_supervisor(env, home, voice_wav):
    """A worker stuck where no signal handler runs is killed after NARRATE_HANG_TIMEOUT."""
    e = fake_env(env, home, NARRATE_FAKE_HANG_ON="STUCK", NARRATE_HANG_TIMEOUT="2", NARRATE_MAX_ATTEMPTS="2")
    doc = home / "hang.txt"
    doc.write_text(book(10, "STUCK"))
    job_id = submit(e, doc, voice_wav, home / "out" / "hang.wav")
    supervisor = start_worker(e)
    try:
        st = wait_for_job(job_id, timeout=60)
    finally:
        log = stop_worker(supervisor)
    assert st["status"] == "failed" and "crashed the worker 2 times" in st["error"], (st, log[-1500:])
    assert "STUCK" in st["error"]
    assert "made no progress" in log
