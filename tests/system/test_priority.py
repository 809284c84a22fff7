"""`submit --priority high|normal|low`: three rq queues (narrate-high, narrate, narrate-low) that a
worker takes in that order; recovery at worker start and `narrate resume` cover all three."""

from __future__ import annotations

import os
import signal

from helpers.books import write_docs
from helpers.fake import fake_env, wait_synthesized
from helpers.ops import submit_json
from helpers.procs import child_pid, narrate, start_worker, stop_worker, wait_for_job, wait_until


def test_a_high_job_queued_after_normal_ones_runs_first(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=5)
    docs = write_docs(home, {"n1.txt": 2, "n2.txt": 2, "n3.txt": 2, "low.txt": 2, "high.txt": 2})
    out = ("-o", str(home / "out"))
    normal = submit_json(e, docs[:3], voice_wav, *out)
    [low] = submit_json(e, [docs[3]], voice_wav, *out, "--priority", "low")
    [high] = submit_json(e, [docs[4]], voice_wav, *out, "--priority", "high")
    assert high["priority"] == "high" and external_redis.llen("rq:queue:narrate-high") == 1
    assert external_redis.llen("rq:queue:narrate") == 3 and external_redis.llen("rq:queue:narrate-low") == 1
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    started = {j["id"]: wait_for_job(j["id"])["started_at"] for j in [*normal, low, high]}
    order = sorted(started, key=started.get)
    assert order == [high["id"], *(j["id"] for j in normal), low["id"]]


def test_recovery_and_resume_cover_every_priority(env, home, voice_wav, external_redis):
    """A worker killed during a high-priority job: its successor requeues it from narrate-high at
    once; a failed low-priority job is found by a plain `narrate resume`."""
    e = fake_env(env, home, delay_ms=60, NARRATE_FAKE_FAIL_ON="BROKEN", NARRATE_MAX_ATTEMPTS="1")
    [urgent] = submit_json(
        e, write_docs(home, {"urgent.txt": 16}), voice_wav, "-o", str(home / "out"), "--priority", "high"
    )
    bad = home / "bad.txt"
    bad.write_text("This one is BROKEN. It fails.")
    [failing] = submit_json(e, [bad], voice_wav, "-o", str(home / "out"), "--priority", "low")
    supervisor = start_worker(e)
    try:
        wait_synthesized(home, 4)
        os.kill(child_pid(home, supervisor)[1], signal.SIGKILL)
        assert wait_for_job(urgent["id"], timeout=60)["status"] == "finished"
        assert wait_for_job(failing["id"], timeout=60)["status"] == "failed"
    finally:
        log = stop_worker(supervisor)
    assert f"requeued abandoned jobs of this host: {urgent['id']}" in log, log
    fixed = dict(e, NARRATE_FAKE_FAIL_ON="NOTHING-MATCHES")
    out = narrate(fixed, "resume")
    assert out.returncode == 0 and f"{failing['id']}: requeued" in out.stdout, out.stdout
    assert external_redis.lrange("rq:queue:narrate-low", 0, -1) == [failing["id"].encode()]
    assert narrate(fixed, "worker", "--burst", "--quiet").returncode == 0
    wait_until(lambda: wait_for_job(failing["id"])["status"] == "finished", 10, "the resumed job")
