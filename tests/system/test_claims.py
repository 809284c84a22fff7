"""Taking a job off the queue loses nothing: a stop signal or a kill -9 between the claim and the
job's start, or a lost reply to the claim (a connection broken and the command retried)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from helpers.books import book
from helpers.fake import fake_env, synthesized
from helpers.ops import submit_book
from helpers.procs import narrate, wait_for_job
from narrate.jobs.api import submit as api
from narrate.jobs.queue import claims
from narrate.jobs.queue.queues import queue_names
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings
from narrate.worker.process.rq_worker import make_worker
from narrate.worker.process.runtime import WorkerRuntime
from rq import Queue
from rq.serializers import JSONSerializer


@pytest.mark.parametrize("where", ["taken", "being started"])
def test_a_stop_while_a_job_is_claimed_loses_no_job(env, home, voice_wav, monkeypatch, where):
    """SIGTERM lands after the worker took a job off its queue but before the job is registered as
    started. rq would raise in its handler there and drop the job (its hash says "queued", no queue
    holds it); narrate's worker puts it back at the front of its queue."""
    e = in_this_process(fake_env(env, home), monkeypatch)
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


def in_this_process(e: dict, monkeypatch) -> dict:
    """The fake engine's settings for the worker these tests run in this process too."""
    for k, v in e.items():
        if k.startswith("NARRATE_"):
            monkeypatch.setenv(k, v)
    return e


KILL_AT = """
import os, signal, sys
from narrate.jobs.queue import claims
from narrate.worker.process import main as process, rq_worker, runtime
from narrate.jobs.api.submit import JOB_FUNCTION

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
    e = fake_env(env, home)
    job_id = submit_book(e, home, voice_wav, book(8))
    proc = subprocess.run([sys.executable, "-c", KILL_AT, where], env=e, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(job_id, timeout=60)
    assert st["status"] == "finished", st
    assert st["result"]["attempts"] == 1  # the killed worker never began an attempt


def test_a_job_left_on_the_claim_list_by_a_lost_reply_is_run(env, home, voice_wav, monkeypatch):
    """The claim moved the job but its reply was lost (the client retried and moved nothing more): the
    live worker finds it on its claim list at its next look and runs it."""
    e = in_this_process(fake_env(env, home), monkeypatch)
    job_id = submit_book(e, home, voice_wav, book(4))
    settings = Settings.from_env()
    rt = WorkerRuntime(settings)
    with Connection(settings) as conn:
        r = conn.redis
        q = Queue(settings.queue, connection=r, serializer=JSONSerializer)
        assert r.lmove(q.key, claims.claim_key(rt.host_id)).decode() == job_id  # claimed; the reply lost
        worker = make_worker(r, queue_names(settings.queue), settings, rt.make_context, rt.host_id)
        saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            worker.work(burst=True, logging_level="WARNING", with_scheduler=False)
        finally:
            for s, h in saved.items():
                signal.signal(s, h)
        assert api.status(r, job_id)["status"] == "finished"
        assert r.llen(claims.claim_key(rt.host_id)) == 0 and len(synthesized(home)) == 4
