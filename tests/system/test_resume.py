"""`narrate resume` and worker liveness in Redis."""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime, timedelta

from helpers.books import book
from helpers.fake import fake_env, synthesized, wait_synthesized
from helpers.ops import submit, submit_book
from helpers.procs import child_pid, narrate, start_worker, stop_worker, wait_for_job


def test_resume_requeues_a_job_whose_worker_is_gone(env, home, voice_wav, external_redis):
    """`narrate resume` finds started jobs whose worker stopped beating and requeues them."""
    e = fake_env(env, home, delay_ms=80)
    doc = home / "gone.txt"
    doc.write_text(book(12))
    job_id = submit(e, doc, voice_wav, home / "out" / "gone.wav")
    supervisor = start_worker(e)
    wait_synthesized(home, 4)
    holder = child_pid(home, supervisor)[1]
    stop_worker(supervisor, signal.SIGKILL)
    os.kill(holder, signal.SIGKILL)
    worker_keys = external_redis.keys("rq:worker:*")
    for k in worker_keys:  # age its heartbeat past the abandonment threshold
        if external_redis.type(k) == b"hash":
            external_redis.hset(k, "last_heartbeat", "2020-01-01T00:00:00.000000Z")
    out = narrate(e, "resume")
    assert out.returncode == 0 and f"{job_id}: requeued (its worker is gone)" in out.stdout, out.stdout
    # a worker from another host (different lock path) finishes it
    other = dict(e, NARRATE_LOCK_PATH=str(home / "other.lock"))
    assert narrate(other, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job_id)["status"] == "finished"


def test_busy_worker_keeps_beating(env, home, voice_wav, external_redis):
    """RQ's SimpleWorker sends no heartbeat during a job; narrate's worker does, so a long job's
    worker and StartedJobRegistry entry stay alive."""
    e = fake_env(env, home, delay_ms=100, NARRATE_HEARTBEAT_S="1")
    doc = home / "long.txt"
    doc.write_text(book(40))
    job_id = submit(e, doc, voice_wav, home / "out" / "long.wav")
    supervisor = start_worker(e)
    try:
        wait_synthesized(home, 2)
        seen = []
        for _ in range(3):
            [key] = [k for k in external_redis.keys("rq:worker:*") if external_redis.type(k) == b"hash"]
            beat = external_redis.hget(key, "last_heartbeat")
            score = max(s for _, s in external_redis.zrange("rq:wip:narrate", 0, -1, withscores=True))
            seen.append((beat, score))
            time.sleep(1.3)
        assert wait_for_job(job_id)["status"] == "finished"
    finally:
        stop_worker(supervisor)
    beats, scores = zip(*seen, strict=True)
    assert len(set(beats)) == 3 and list(scores) == sorted(scores) and scores[-1] > scores[0]


def test_resume_leaves_a_slow_beating_worker_alone(env, home, voice_wav, external_redis):
    """A worker that beats every 120 s is alive 100 s after its last beat: `resume` leaves its job
    alone and says when it would count as gone (it used to assume a 10 s heartbeat)."""
    hold = home / "hold"  # the fake engine waits after its first batch while this file exists
    hold.touch()
    e = fake_env(env, home, delay_ms=20, NARRATE_HEARTBEAT_S="120", NARRATE_FAKE_HOLD_FILE=str(hold))
    n = 12
    job_id = submit_book(e, home, voice_wav, book(n), name="slow")
    supervisor = start_worker(e)
    try:
        wait_synthesized(home, 2)
        [key] = [k for k in external_redis.keys("rq:worker:*") if external_redis.type(k) == b"hash"]
        beat = datetime.now(UTC) - timedelta(seconds=100)  # as if the last beat was 100 s ago
        external_redis.hset(key, "last_heartbeat", beat.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
        out = narrate(e, "resume")
        assert out.returncode == 0, out.stderr
        assert f"{job_id}: left alone (started: its worker" in out.stdout, out.stdout
        assert "counts as gone after 390 s" in out.stdout, out.stdout
        hold.unlink()
        assert wait_for_job(job_id, timeout=60)["status"] == "finished"
    finally:
        hold.unlink(missing_ok=True)
        stop_worker(supervisor)
    indices = [i for i, _ in synthesized(home)]
    assert sorted(indices) == list(range(n))  # every sentence once: the job never ran twice
