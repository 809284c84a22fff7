"""``narrate cancel``: a queued or scheduled job is taken out of its queue (recorded as canceled); a
running one is asked to stop for good, which it does within a second, dropping the sentences it has
not finished (its checkpoints
stay: ``narrate resume JOB`` continues it). The ask is the job hash field ``narrate_cancel``, which
the job reads between batches (jobs.task.context), next to rq's own cancel and a deleted record."""

from __future__ import annotations

import redis
from narrate.jobs.errors import BadInput, JobNotFound
from narrate.jobs.queue.lifecycle import CANCEL_FIELD, abandoned, mark_canceled
from narrate.jobs.server.durability import durable_writes
from narrate.jobs.server.records import fetch
from rq.job import Job, JobStatus

# What `cancel` did: the first two end the job now, the others are already so or will be soon.
CANCELED, CANCELED_GONE, STOPPING = (
    "canceled",
    "canceled (its worker was gone)",
    "stopping (within a second: its unfinished sentences are dropped, its checkpoints kept)",
)
ALREADY_CANCELED, ALREADY_STOPPING = "already canceled", "already stopping (canceled)"


def cancel(r: redis.Redis, job_id: str, asked_by: str = "narrate cancel") -> str:
    """Cancel one job; returns what happened (see the constants above). Raises JobNotFound for an
    unknown or expired id and BadInput for a job that already ended."""
    with durable_writes(r):
        said = _cancel(r, job_id, asked_by)
        parts = (fetch(r, job_id).meta or {}).get("parts") or []  # a fanned-out book: its parts too
        stopped = [p for p in parts if _cancel_part(r, p, asked_by)]
        return f"{said}; {len(stopped)} of its {len(parts)} parts canceled or stopping" if parts else said


def _cancel_part(r: redis.Redis, job_id: str, asked_by: str) -> bool:
    try:
        return _cancel(r, job_id, asked_by) in (CANCELED, CANCELED_GONE, STOPPING)
    except (BadInput, JobNotFound):  # finished (or expired): nothing to stop
        return False


def _cancel(r: redis.Redis, job_id: str, asked_by: str) -> str:
    key = Job.key_for(job_id)
    with r.pipeline() as p:
        while True:  # the job may change under us (a worker takes it, beats, saves progress): try again
            try:
                p.watch(key)
                job = fetch(r, job_id)
                state = job.get_status(refresh=False)
                _refuse_ended(job_id, state)
                if state == JobStatus.CANCELED:
                    return ALREADY_CANCELED
                if state == JobStatus.STARTED:
                    if r.hexists(key, CANCEL_FIELD):
                        return ALREADY_STOPPING
                    gone, _ = abandoned(r, job)
                    p.multi()
                    p.hset(key, CANCEL_FIELD, asked_by)
                    if gone:
                        mark_canceled(r, job, p)
                    p.execute()
                    return CANCELED_GONE if gone else STOPPING
                # queued, scheduled or deferred. The field too: a worker that popped it from its queue
                # a moment ago, and is about to start it, stops before its first batch.
                p.multi()
                p.hset(key, CANCEL_FIELD, asked_by)
                mark_canceled(r, job, p)
                p.execute()
                return CANCELED
            except redis.WatchError:
                continue


def _refuse_ended(job_id: str, state: JobStatus | None) -> None:
    if state == JobStatus.FINISHED:
        raise BadInput(f"job {job_id} already finished; there is nothing to cancel (narrate status {job_id})")
    if state in (JobStatus.FAILED, JobStatus.STOPPED):
        raise BadInput(
            f"job {job_id} already failed; there is nothing to cancel (narrate resume {job_id} would run it again)"
        )
