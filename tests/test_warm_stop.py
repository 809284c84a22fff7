"""A warm stop (SIGTERM/Ctrl-C): the batch in flight is finished, the job requeued, the worker exits 0;
a stop or a kill -9 while a job is being taken loses no job."""

from __future__ import annotations

import os
import signal
import time

import pytest
from conftest import narrate, start_worker, stop_worker, wait_for_job
from faults import (
    book,
    fake_env,
    golden,
    submit_book,
    synthesized,
    wait_for_job_state,
    wait_synthesized,
)
from narrate.jobs import api
from narrate.jobs.connection import Connection
from narrate.jobs.settings import Settings

N = 40
KILLS = int(os.environ.get("NARRATE_TEST_KILLS", "5"))


def test_sigterm_finishes_the_batch_requeues_and_exits_0(env, home, voice_wav):
    """SIGTERM mid-job -> the batch in flight is checkpointed, the job requeued, exit 0;
    a new worker finishes it without redoing a sentence."""
    e = fake_env(env, home, delay_ms=100)
    text = book(N)
    want = golden(e, home, voice_wav, text)
    job_id = submit_book(e, home, voice_wav, text)
    supervisor = start_worker(e)
    wait_synthesized(home, 6)
    t0 = time.monotonic()
    log = stop_worker(supervisor, signal.SIGTERM)
    assert supervisor.returncode == 0, log
    assert time.monotonic() - t0 < 0.1 * 4 + 3  # at most one batch, then out
    # A normal stop is one INFO line, not an ERROR with a traceback.
    assert "Traceback" not in log and " ERROR " not in log, log[-3000:]
    assert "stopped after its batch in flight" in log, log[-3000:]
    st = wait_for_job_state(job_id, "queued")
    done = st["progress"]["done"]
    assert 0 < done < N and done % 4 == 0  # whole batches only
    assert len(synthesized(home)) == done  # nothing synthesized was thrown away
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0
    st = wait_for_job(job_id)
    assert st["status"] == "finished" and st["result"]["synthesized"] == N - done
    assert len(synthesized(home)) == N and (home / "out" / "book.wav").read_bytes() == want


def test_sigterm_while_the_worker_starts_is_a_clean_stop(env, home):
    """A stop that reaches the worker process before it is ready (still importing) exits 0."""
    import subprocess
    import sys

    for delay in (0.3, 0.6, 1.0):
        proc = subprocess.Popen(
            [sys.executable, "-m", "narrate.cli.main", "worker"],
            env=dict(env, NARRATE_ENGINE="fake"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGTERM)  # as a service manager stops the whole group
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, (delay, proc.returncode, out[-2000:])


@pytest.mark.parametrize("where", ["taken", "being started"])
def test_a_stop_while_a_job_is_claimed_loses_no_job(env, home, voice_wav, monkeypatch, where):
    """SIGTERM lands after the worker took a job off its queue but before the job is registered as
    started. rq would raise in its handler there and drop the job (its hash says "queued", no queue
    holds it); narrate's worker puts it back at the front of its queue."""
    from narrate.jobs import claims
    from narrate.jobs.queues import queue_names
    from narrate.worker.rq_worker import make_worker
    from narrate.worker.runtime import WorkerRuntime
    from rq import Queue
    from rq.serializers import JSONSerializer

    monkeypatch.setenv("NARRATE_ENGINE", "fake")
    e = fake_env(env, home)
    job_id = submit_book(e, home, voice_wav, book(8))
    settings = Settings.from_env()
    rt = WorkerRuntime(settings)
    real_claim = claims.claim_next

    def claim_next(*args, **kwargs):
        got = real_claim(*args, **kwargs)
        if got is not None and where == "taken":
            os.kill(os.getpid(), signal.SIGTERM)  # handled at the next bytecode, the job in hand
        return got

    def make_context(job):
        if where == "being started":
            os.kill(os.getpid(), signal.SIGTERM)
        return rt.make_context(job)

    monkeypatch.setattr(claims, "claim_next", claim_next)
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    with Connection(settings) as conn:
        r = conn.redis
        worker = make_worker(r, queue_names(settings.queue), settings, make_context, rt.host_id)
        try:
            worker.work(burst=False, logging_level="WARNING", with_scheduler=False)
        finally:
            for s, h in saved.items():
                signal.signal(s, h)
        st = api.status(r, job_id)
        assert st["status"] == "queued", st
        assert Queue(settings.queue, connection=r, serializer=JSONSerializer).job_ids == [job_id]  # at the front
        assert r.llen(claims.claim_key(rt.host_id)) == 0
        assert len(synthesized(home)) == 0
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job_id, timeout=60)["status"] == "finished"


KILL_AT = """
import os, signal, sys
from narrate.jobs import claims
from narrate.worker import process, rq_worker, runtime
from narrate.jobs.api import JOB_FUNCTION

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

where = sys.argv[1]
if where == "taken":
    real = claims.claim_next
    def claim_next(*args, **kwargs):
        got = real(*args, **kwargs)
        if got is not None:
            die()
        return got
    claims.claim_next = claim_next
elif where == "being started":
    runtime.WorkerRuntime.make_context = die
else:  # "started": registered as started, before the job function ran
    rq_worker.FUNCTIONS[JOB_FUNCTION] = die
sys.exit(process.main(["--burst"]))
"""


@pytest.mark.parametrize("where", ["taken", "being started", "started"])
def test_kill_9_while_a_job_is_claimed_loses_no_job(env, home, voice_wav, where):
    """kill -9 between taking a job off the queue and running it: the next worker of the host puts it
    back (it never began: no attempt counted) or recovers it as abandoned (it had begun)."""
    import subprocess
    import sys

    e = fake_env(env, home)
    job_id = submit_book(e, home, voice_wav, book(8))
    proc = subprocess.run([sys.executable, "-c", KILL_AT, where], env=e, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(job_id, timeout=60)
    assert st["status"] == "finished", st
    assert st["result"]["attempts"] == 1  # the killed worker never began an attempt
