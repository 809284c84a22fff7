"""`narrate run`: one request, synthesized in this process, or handed to the worker that runs here.

- Nobody holds this process's host lock (worker/process/host.py): the job goes on a private queue
  (no other worker takes it) and a worker runs it in this process, at once.
- A `narrate worker` of this Redis server holds it (the same home's embedded Valkey, or the same
  NARRATE_REDIS_URL): the job is handed to that worker (worker/process/handoff.py: its queue, high
  priority; its progress followed, its output put at -o). If that worker goes away and no other takes
  its place, the job continues here (``take_over``).
- Anything else holds it (another `narrate run`, a worker of another server): this process looks
  again twice a second (a worker that has just taken the lock registers on the server a moment
  later: the job is handed to it then) and runs the job here once the lock is free; the caller is
  told whom it waits for. With `--here` (the caller asked for this process): the private queue, and
  the worker runs here once the holder lets go of the lock.

Whatever happens (finished, failed, Ctrl-C, SIGTERM), the private queue is removed; a job of it that
did not finish is deleted too (its checkpoints stay, so running the same command again continues
where it stopped). A handed-off job that Ctrl-C interrupts is canceled (handoff.Interrupted)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from narrate.jobs.api import submit as api
from narrate.jobs.errors import JobNotFound
from narrate.jobs.queue.claims import recover_claims
from narrate.jobs.queue.rq_compat import check_rq_internals
from narrate.jobs.queue.runs import new_run_queue, remove_run_queue, sweep_dead_runs
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings
from narrate.jobs.task.context import ProgressListener
from narrate.worker.process import handoff
from narrate.worker.process.host import alive, host_lock, host_lock_if_free, lock_owner, lock_path
from narrate.worker.process.rq_worker import make_worker
from narrate.worker.process.runtime import WorkerRuntime
from redis import Redis
from rq import Queue

ENDED = ("finished", "failed")
ROLE = "narrate run"
WAIT_POLL_S = 0.5  # how often a waiting `run` looks at the lock again (and for a worker holding it)
SAY_AFTER_S = 3.0  # a worker that took the lock a moment ago registers on the server within this; then say why
BUSY_HINT = (
    "It runs this command's job once that process lets go of the lock. To use the running worker instead, "
    "press Ctrl-C and submit the document to its queue: narrate submit DOCUMENT --voice VOICE -o OUTPUT --wait "
    "(or stop that worker)"
)
HERE_HINT = (
    "It runs this command's job once that worker lets go of the lock (--here). Without --here, `narrate run` "
    "hands its job to that worker"
)


def run_in_process(
    settings: Settings,
    req: api.Request,
    on_progress: ProgressListener | None = None,
    waiting: Callable[[str], None] | None = None,
    say: Callable[[str], None] | None = None,
    here: bool = False,
) -> dict:
    """Returns the job's final status (a dict as api.status gives it; ``output``: where -o points).
    `waiting`: told whom this process waits for; `say`: told where the job goes (one line each);
    `here`: never hand the job to a running worker."""
    check_rq_internals()
    rt = WorkerRuntime(settings, on_progress=on_progress)
    tell = say or (lambda _msg: None)
    with Connection(settings, patient=True) as conn:
        r = conn.redis
        sweep_dead_runs(r, rt.host_id, alive)  # what a killed run of this host left (jobs/queue/runs.py)
        if here:
            return _here(settings, rt, r, req, waiting)

        def take_over(job_id: str, gone: str | None) -> dict | None:
            return _take_over(settings, rt, r, job_id, gone, tell)

        path, since, told = lock_path(settings), time.monotonic(), False
        while True:  # until the lock is free, or a worker to hand the job to holds it
            with host_lock_if_free(path, ROLE, home=settings.home) as free:
                if free:
                    return _run_here(settings, rt, r, req, locked=True)
            target = handoff.find_worker(settings, r)
            if target is not None:
                return handoff.hand_off(settings, r, req, target, on_progress, tell, take_over)
            if not told and waiting is not None and time.monotonic() - since >= SAY_AFTER_S:
                owner = lock_owner(path) or "another process"
                waiting(
                    f"waiting for the host lock {path}, held by {owner} (one synthesizing worker per lock). {BUSY_HINT}"
                )
                told = True
            time.sleep(WAIT_POLL_S)


def _here(
    settings: Settings, rt: WorkerRuntime, r: Redis, req: api.Request, waiting: Callable[[str], None] | None
) -> dict:
    """`--here`: at once if the lock is free, else once its holder lets go of it (the caller told whom)."""
    with host_lock_if_free(lock_path(settings), ROLE, home=settings.home) as free:
        if free:
            return _run_here(settings, rt, r, req, locked=True)
    hint = HERE_HINT if handoff.find_worker(settings, r) is not None else BUSY_HINT
    said = waiting and (lambda msg: waiting(f"{msg}. {hint}"))
    return _run_here(settings, rt, r, req, waiting=said or None)


def _run_here(
    settings: Settings,
    rt: WorkerRuntime,
    r: Redis,
    req: api.Request,
    locked: bool = False,
    waiting: Callable[[str], None] | None = None,
) -> dict:
    """Submit to a private queue and run it here (`locked`: this process holds the host lock already)."""
    q = new_run_queue(r, rt.host_id)
    job_id = None
    try:
        job_id = api.submit(
            settings, r, replace(req, options=replace(req.options, fan_out="none")), queue_name=q.name
        ).job.id
        if locked:
            _work(settings, rt, r, q)
        else:
            with host_lock(lock_path(settings), ROLE, waiting=waiting, home=settings.home):
                _work(settings, rt, r, q)
        return _final(r, job_id)
    finally:
        remove_run_queue(r, q, [job_id] if job_id else [])


def _take_over(
    settings: Settings, rt: WorkerRuntime, r: Redis, job_id: str, gone: str | None, say: Callable[[str], None]
) -> dict | None:
    """A handed-off job whose worker is gone, continued here: only if this process gets the host lock
    now (no worker of it is alive) and the job is still in that worker's queue, or was started by the
    gone worker `gone` (handoff.move_here). None when it is not (the caller keeps following)."""
    with host_lock_if_free(lock_path(settings), ROLE, home=settings.home) as free:
        if not free:
            return None
        recover_claims(r, rt.host_id)  # a job the last worker of this home took but never began: back in its queue
        q = new_run_queue(r, rt.host_id)
        moved = False
        try:
            moved = handoff.move_here(r, job_id, q.name, gone)
            if not moved:
                return None
            say("no worker holds this host's lock any more; this job continues here, from its checkpoints")
            _work(settings, rt, r, q)
            return _final(r, job_id)
        finally:
            remove_run_queue(r, q, [job_id] if moved else [])


def _work(settings: Settings, rt: WorkerRuntime, r: Redis, q: Queue) -> None:
    worker = make_worker(r, [q.name], settings, rt.make_context, rt.host_id)
    worker.log_failures = False  # said once, by the caller, from the status
    worker.work(burst=True, logging_level="CRITICAL", with_scheduler=False)  # errors: in the status


def _final(r: Redis, job_id: str) -> dict:
    try:
        return api.status(r, job_id)
    except JobNotFound:  # rq-dashboard's Delete: the job stopped after its batch in flight
        raise JobNotFound(f"job {job_id} was deleted while it ran; no output was written") from None
