"""`narrate run`: the server, a private queue and a worker in this one process, for one request.

The job goes on a private queue (no other worker takes it) and the worker runs here once this
process holds the host lock; while a `narrate worker` of this host holds it, the caller is told
whom it waits for. Whatever happens (finished, failed, Ctrl-C, SIGTERM), the private queue is
removed; a job that did not finish is deleted too (its checkpoints stay, so running the same
command again continues where it stopped)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from dataclasses import replace

from narrate.jobs.api import submit as api
from narrate.jobs.errors import JobNotFound
from narrate.jobs.queue.rq_compat import check_rq_internals
from narrate.jobs.server.connection import Connection
from narrate.jobs.server.records import queue
from narrate.jobs.settings import Settings
from narrate.jobs.task.context import ProgressListener
from narrate.worker.process.host import host_lock, lock_path
from narrate.worker.process.rq_worker import make_worker
from narrate.worker.process.runtime import WorkerRuntime
from redis import Redis
from rq import Queue

ENDED = ("finished", "failed")
BUSY_HINT = (
    "It runs this command's job once that process lets go of the lock. To use the running worker instead, "
    "press Ctrl-C and submit the document to its queue: narrate submit DOCUMENT --voice VOICE -o OUTPUT --wait "
    "(or stop that worker)"
)


def run_in_process(
    settings: Settings,
    req: api.Request,
    on_progress: ProgressListener | None = None,
    waiting: Callable[[str], None] | None = None,
) -> dict:
    """Returns the job's final status (a dict as api.status gives it)."""
    check_rq_internals()
    rt = WorkerRuntime(settings, on_progress=on_progress)
    with Connection(settings, patient=True) as conn:
        r = conn.redis
        q = queue(r, f"narrate-run-{uuid.uuid4().hex[:12]}")
        job_id = None
        try:
            job_id = api.submit(
                settings, r, replace(req, options=replace(req.options, fan_out="none")), queue_name=q.name
            ).job.id
            said = waiting and (lambda msg: waiting(f"{msg}. {BUSY_HINT}"))
            with host_lock(lock_path(settings), "narrate run", waiting=said or None, home=settings.home):
                worker = make_worker(r, [q.name], settings, rt.make_context, rt.host_id)
                worker.log_failures = False  # said once, by the caller, from the status
                worker.work(burst=True, logging_level="CRITICAL", with_scheduler=False)  # errors: in the status
            try:
                return api.status(r, job_id)
            except JobNotFound:  # rq-dashboard's Delete: the job stopped after its batch in flight
                raise JobNotFound(f"job {job_id} was deleted while it ran; no output was written") from None
        finally:
            _clean_up(r, q, job_id)


def _clean_up(r: Redis, q: Queue, job_id: str | None) -> None:
    try:
        unfinished = job_id is not None and api.status(r, job_id)["status"] not in ENDED
    except JobNotFound:  # deleted meanwhile (rq-dashboard's Delete): its worker stopped it
        unfinished = False
    q.delete(delete_jobs=unfinished)
    registries = (q.started_job_registry, q.finished_job_registry, q.failed_job_registry, q.deferred_job_registry,
                  q.scheduled_job_registry, q.canceled_job_registry)  # fmt: skip
    r.delete(*[reg.key for reg in registries])
    if unfinished:  # queued ones went with the queue; a started one is deleted here
        with contextlib.suppress(JobNotFound):
            api.fetch(r, job_id).delete()
