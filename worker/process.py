"""The worker process: a non-forking RQ worker (models stay warm across jobs) that uses the JSON
serializer, runs only narrate's own job function, and is crash-safe:

- it holds the host lock from start to exit, so when it starts, no other worker of this host
  is alive, and every "started" job of this host is abandoned: it is requeued at once (or,
  after ``max_attempts`` crashes, failed with the sentences that were in flight) instead of
  waiting for RQ's job_timeout + 60 s + maintenance pass;
- a heartbeat thread keeps the worker and its job alive in Redis while a long job runs;
- a warm stop (SIGTERM/SIGINT) ends the job after the batch in flight and requeues it.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from pathlib import Path

import redis
from narrate.jobs.api import JOB_FUNCTION, started_entries
from narrate.jobs.checkpoints import CheckpointStore
from narrate.jobs.connection import Connection
from narrate.jobs.settings import Settings
from rq import Queue, SimpleWorker
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry
from rq.serializers import JSONSerializer

from .lock import host_lock
from .runtime import Runtime, get_runtime, set_runtime

log = logging.getLogger("narrate.worker")
ALLOWED_FUNCTIONS = frozenset({JOB_FUNCTION})
ALLOWED_CALLBACKS: frozenset[str] = frozenset()


class RefusedJob(Exception):
    """A job names a function or callback narrate does not run (a forged or foreign job)."""


class AllowlistedJob(Job):
    """A job that refuses to import anything but narrate's own job function."""

    def perform(self):
        if self.func_name not in ALLOWED_FUNCTIONS:
            raise RefusedJob(f"refusing to run {self.func_name!r}: not a narrate job function")
        return super().perform()

    def _check_callback(self, name: str | None) -> None:
        if name is not None and name not in ALLOWED_CALLBACKS:
            raise RefusedJob(f"refusing callback {name!r}: not allowed")

    @property
    def success_callback(self):
        self._check_callback(self._success_callback_name)
        return super().success_callback

    @property
    def failure_callback(self):
        self._check_callback(self._failure_callback_name)
        return super().failure_callback

    @property
    def stopped_callback(self):
        self._check_callback(self._stopped_callback_name)
        return super().stopped_callback


class NarrateWorker(SimpleWorker):
    """SimpleWorker: the job runs in this process, so loaded models survive between jobs."""

    job_class = AllowlistedJob

    def request_stop(self, signum, frame):
        get_runtime().stop_requested = True  # the running job stops after its batch in flight
        super().request_stop(signum, frame)

    def execute_job(self, job: Job, queue: Queue):
        stop = threading.Event()
        beat = threading.Thread(target=self._heartbeats, args=(job, stop), daemon=True)
        beat.start()
        try:
            super().execute_job(job, queue)
        finally:
            stop.set()
            beat.join(timeout=5)

    def _heartbeats(self, job: Job, stop: threading.Event) -> None:
        """RQ's SimpleWorker sends none while a job runs; a long book needs them."""
        while not stop.wait(get_runtime().settings.heartbeat_s):
            try:
                self.maintain_heartbeats(job)
            except Exception as e:  # noqa: BLE001 - Redis down: the next beat tries again
                log.warning("heartbeat failed: %s", e)

    def handle_job_failure(self, job: Job, queue: Queue, started_job_registry=None, exc_string=""):
        rt = get_runtime()
        if not rt.requeue_current:
            return super().handle_job_failure(job, queue, started_job_registry, exc_string)
        rt.requeue_current = False  # a warm stop: back to the front of the queue, no attempt used
        job.meta["attempts"] = max(0, int(job.meta.get("attempts", 1)) - 1)
        job.save_meta()
        with self.connection.pipeline() as pipeline:
            self.cleanup_execution(job, pipeline=pipeline)
            queue._enqueue_job(job, pipeline=pipeline, at_front=True)
            pipeline.execute()
        log.info("job %s requeued after a warm stop", job.id)


def recover_abandoned(r: redis.Redis, queue: Queue, rt: Runtime) -> list[str]:
    """Requeue the started jobs of this host at the front of the queue. Call it while holding the
    host lock: then no worker of this host is alive, so these jobs are abandoned.

    Poison pills: a job whose sentences crash the worker (abort, segfault, a hang the supervisor
    killed, an error exit) `max_attempts` times in a row on the same batch fails for good,
    naming them; a crash after progress starts the count again. A SIGKILL from outside (an
    operator, a reboot, the OOM killer) says nothing about the job and counts for a tenth, so
    only a batch that is killed again and again (memory blow-ups) ends up failed."""
    registry = StartedJobRegistry(queue=queue, job_class=AllowlistedJob)
    recovered, failed = [], []
    for job_id in registry.get_job_ids(cleanup=False):
        try:
            job = AllowlistedJob.fetch(job_id, connection=r, serializer=JSONSerializer)
        except Exception:  # noqa: BLE001 - gone or unreadable: RQ's own cleanup handles it
            continue
        if job.meta.get("host") != rt.host_id or job.get_status(refresh=False) != JobStatus.STARTED:
            continue
        in_flight = job.meta.get("in_flight")
        same = in_flight is not None and job.meta.get("crash_in_flight") == in_flight
        weight = 1.0 if _crashed_from_inside() else 0.1
        crashes = round(float(job.meta.get("crashes", 0)) * same + weight, 2)
        job.meta.update(crashes=crashes, crash_in_flight=in_flight)
        members = started_entries(r, registry, job_id)
        if crashes >= rt.settings.max_attempts:
            job.retries_left = 0
            job.meta["error"] = f"crashed the worker {crashes:g} times on sentences {_in_flight(r, job)}"
            job.save()
            for member in members:  # expired: RQ's cleanup fails it (no retries left)
                r.zadd(registry.key, {member: 1})
            failed.append(job_id)
            continue
        job.save_meta()
        with r.pipeline() as p:
            for member in members:
                p.zrem(registry.key, member)
            queue._enqueue_job(job, pipeline=p, at_front=True)
            p.execute()
        recovered.append(job_id)
    if failed:
        registry.cleanup()
        log.error("failed jobs that keep crashing the worker: %s", ", ".join(failed))
    if recovered:
        log.warning("requeued abandoned jobs of this host: %s", ", ".join(recovered))
    return recovered


def _crashed_from_inside() -> bool:
    """How the previous worker process ended, as the supervisor saw it."""
    cause = os.environ.get("NARRATE_PREVIOUS_EXIT", "")
    return bool(cause) and cause != "signal SIGKILL"


def _in_flight(r: redis.Redis, job: Job) -> str:
    indices = job.meta.get("in_flight") or []
    if not indices:
        return "unknown"
    from narrate.jobs import store

    try:
        doc = store.get_document(r, job.args[0]["document"])
        sentences = doc.sentences
        return "; ".join(f"{i} ({sentences[i][:80]!r})" for i in indices)
    except Exception:  # noqa: BLE001
        return ", ".join(map(str, indices))


def _die_with_parent() -> None:
    """Linux: SIGKILL this process if its supervisor dies (its job is then recovered)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def make_worker(conn: Connection, queue_names: list[str]) -> NarrateWorker:
    r = conn.redis
    queues = [Queue(n, connection=r, serializer=JSONSerializer, job_class=AllowlistedJob) for n in queue_names]
    return NarrateWorker(queues, connection=r, serializer=JSONSerializer, job_class=AllowlistedJob)


def run_worker(settings: Settings, burst: bool = False, queue_name: str | None = None, log_level: str = "INFO") -> bool:
    """Run a worker until stopped (or, with burst, until its queue is empty)."""
    logging.basicConfig(level=log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    rt = Runtime(settings)
    set_runtime(rt)
    progress = os.environ.get("NARRATE_PROGRESS_FILE")
    if progress:  # supervised: die with the supervisor, tell it about progress
        _die_with_parent()
        rt.progress_file = Path(progress)
        rt.beat("idle")
    CheckpointStore(settings.home / "checkpoints").sweep_temp()
    with host_lock(settings.lock_path), Connection(settings, patient=True) as conn:
        worker = make_worker(conn, [queue_name or settings.queue])
        recover_abandoned(conn.redis, worker.queues[0], rt)
        rt.beat("idle")
        return worker.work(burst=burst, logging_level=log_level, with_scheduler=False)


def run_in_process(settings: Settings, req, on_progress=None) -> dict:
    """`narrate run`: the server, a private queue and a worker in this process, for one request.
    Returns the job's final status."""
    import uuid

    from narrate.jobs import api
    from narrate.jobs.progress import add_listener, remove_listener

    set_runtime(Runtime(settings))
    if on_progress is not None:
        add_listener(on_progress)
    try:
        with host_lock(settings.lock_path), Connection(settings, patient=True) as conn:
            qname = f"narrate-run-{uuid.uuid4().hex[:12]}"  # private: no other worker takes it
            job = api.submit(settings, conn.redis, req, queue_name=qname).job
            make_worker(conn, [qname]).work(
                burst=True, logging_level="CRITICAL", with_scheduler=False
            )  # errors: in the status
            return api.status(conn.redis, job.id)
    finally:
        if on_progress is not None:
            remove_listener(on_progress)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="narrate-worker-process")
    ap.add_argument("--queue", default=None)
    ap.add_argument("--burst", action="store_true")
    ap.add_argument("--log-level", default="INFO")
    args = ap.parse_args(argv)
    from narrate.jobs.errors import NarrateError

    try:
        run_worker(Settings.from_env(), burst=args.burst, queue_name=args.queue, log_level=args.log_level)
    except NarrateError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
