"""A warm stop (SIGTERM/Ctrl-C): the batch in flight is finished, the job requeued, the worker exits 0."""

from __future__ import annotations

import os
import signal
import time

import pytest
from helpers.books import book
from helpers.fake import fake_env, synthesized, wait_synthesized
from helpers.faults import golden
from helpers.ops import submit_book
from helpers.procs import NARRATE, narrate, start_worker, stop_worker, wait_for_job, wait_for_job_state
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings

N = 40


def test_sigterm_finishes_the_batch_requeues_and_exits_0(env, home, voice_wav):
    """SIGTERM mid-job -> the batch in flight is checkpointed, the job requeued, exit 0;
    a new worker finishes it without redoing a sentence."""
    e = fake_env(env, home, delay_ms=100)
    text = book(N)
    want = golden(dict(e, NARRATE_FAKE_DELAY_MS="0"), home, voice_wav, text)  # the tones do not depend on the delay
    job_id = submit_book(e, home, voice_wav, text)
    supervisor = start_worker(e)
    wait_synthesized(home, 6)
    at_signal = len(synthesized(home))
    log = stop_worker(supervisor, signal.SIGTERM)
    assert supervisor.returncode == 0, log
    # A normal stop is one INFO line, not an ERROR with a traceback.
    assert "Traceback" not in log and " ERROR " not in log, log[-3000:]
    assert "stopped after its batch in flight" in log, log[-3000:]
    st = wait_for_job_state(job_id, "queued")
    done = st["progress"]["done"]
    assert 0 < done < N and done % 4 == 0  # whole batches only
    assert done <= at_signal + 4  # the batch in flight (4 rows), then out: counted, not timed (a busy machine)
    assert len(synthesized(home)) == done  # nothing synthesized was thrown away
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0
    st = wait_for_job(job_id)
    assert st["status"] == "finished" and st["result"]["synthesized"] == N - done
    assert len(synthesized(home)) == N and (home / "out" / "book.wav").read_bytes() == want


def test_sigterm_while_the_worker_starts_is_a_clean_stop(env, home):
    """A stop that reaches the worker process before it is ready (still importing) exits 0."""
    import subprocess

    for delay in (0.3, 0.6, 1.0):
        proc = subprocess.Popen(
            [*NARRATE, "worker"],
            env=dict(env, NARRATE_ENGINE="fake"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGTERM)  # as a service manager stops the whole group
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, (delay, proc.returncode, out[-2000:])


def test_a_second_stop_signal_while_the_first_is_handled_does_not_deadlock(env, home):
    """A stop of the whole process group reaches the worker process twice (directly, and passed on by
    its supervisor). The second can be handled while the first handler holds the stop event's lock:
    setting the event again there deadlocked the worker (seen with py-spy). Here the second signal
    comes exactly then, and an alarm breaks a deadlock."""
    import threading

    from narrate.jobs.queue.queues import queue_names
    from narrate.worker.process.rq_worker import make_worker
    from narrate.worker.process.runtime import WorkerRuntime
    from rq.exceptions import StopRequested

    settings = Settings.from_env()
    rt = WorkerRuntime(settings)
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM)}
    with Connection(settings) as conn:
        worker = make_worker(conn.redis, queue_names(settings.queue), settings, rt.make_context, rt.host_id)

        class SecondSignalInside(threading.Event):
            def set(self):
                with self._cond:  # the first handler holds the lock: the second signal is handled now
                    worker.request_stop(signal.SIGTERM, None)
                    self._flag = True
                    self._cond.notify_all()

        def deadlocked(*_):
            raise TimeoutError("the second stop signal deadlocked the worker")

        worker.stop_event = SecondSignalInside()
        signal.signal(signal.SIGALRM, deadlocked)
        signal.alarm(5)
        try:
            with pytest.raises(StopRequested):  # idle: rq's stop ends the work loop
                worker.request_stop(signal.SIGTERM, None)
        finally:
            signal.alarm(0)
            for s, h in saved.items():
                signal.signal(s, h)
    assert worker.stop_event.is_set()


SWALLOWS_FIRST_STOP = """
import signal, sys, time
got = []
def on_term(*_):
    got.append(1)
    if len(got) > 1:
        print("stops:", len(got), flush=True)
        sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    time.sleep(0.02)
print("stops:", len(got), flush=True)
"""


@pytest.mark.parametrize("state", ["idle", "busy"])
def test_a_lost_stop_is_passed_on_again_to_an_idle_worker_only(tmp_path, monkeypatch, state):
    """A worker process that lost the stop signal (here: one that swallows its first SIGTERM) is sent
    another once RESTOP_S has passed since the stop, if it is not running a job; a busy one is left
    to its warm stop (it ends by itself here, having seen one signal)."""
    import subprocess
    import sys

    from narrate.worker.process import supervisor

    monkeypatch.setattr(supervisor, "RESTOP_S", 0.5)
    progress = tmp_path / "worker.progress"
    progress.write_text(f"{state} {time.time():.3f} 1\n")
    child = subprocess.Popen([sys.executable, "-c", SWALLOWS_FIRST_STOP, "3"], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGTERM)  # the stop, swallowed
    stopped = time.monotonic()
    seen = supervisor._watch(child, progress, 60, lambda: stopped)
    out = child.stdout.read()
    assert seen.code == 0 and out.strip() == ("stops: 2" if state == "idle" else "stops: 1"), out
