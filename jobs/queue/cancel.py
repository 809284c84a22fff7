"""``narrate cancel``: a queued or scheduled job is taken out of its queue (recorded as canceled); a
running one is asked to stop for good, which it does within a second, dropping the sentences it has
not finished (its checkpoints stay: ``narrate resume JOB`` continues it). The ask is the job hash
field ``narrate_cancel``, which the job reads between batches (jobs.task.context), next to rq's own
cancel and a deleted record. What it did is data (`Canceled`: a `Cancel` outcome and a book's
parts), which each front end words; a job that already ended is `JobEnded` (a Conflict)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import redis
from narrate.jobs.errors import Conflict, JobNotFound
from narrate.jobs.queue.lifecycle import CANCEL_FIELD, abandoned, mark_canceled
from narrate.jobs.server.durability import durable_writes
from narrate.jobs.server.records import fetch
from rq.job import Job, JobStatus


class Cancel(enum.Enum):
    """What `cancel` did: the first two end the job now, the others are already so or will be soon."""

    CANCELED = "canceled"
    CANCELED_GONE = "canceled_gone"  # a started job whose worker was gone
    STOPPING = "stopping"  # its worker stops it within a second
    ALREADY_CANCELED = "already_canceled"
    ALREADY_STOPPING = "already_stopping"


# The command line's words for each (the HTTP API's `action` too).
WORDS = {
    Cancel.CANCELED: "canceled",
    Cancel.CANCELED_GONE: "canceled (its worker was gone)",
    Cancel.STOPPING: "stopping (within a second: its unfinished sentences are dropped, its checkpoints kept)",
    Cancel.ALREADY_CANCELED: "already canceled",
    Cancel.ALREADY_STOPPING: "already stopping (canceled)",
}
ENDING = frozenset({Cancel.CANCELED, Cancel.CANCELED_GONE, Cancel.STOPPING})  # this request ends it


@dataclass(frozen=True)
class Canceled:
    """The outcome of `cancel`: what it did to the job and, for a fanned-out book, to its parts."""

    job_id: str
    outcome: Cancel
    parts: int = 0  # a fanned-out book's parts
    parts_stopped: int = 0  # of those, canceled or stopping by this request

    def __str__(self) -> str:
        said = WORDS[self.outcome]
        return f"{said}; {self.parts_stopped} of its {self.parts} parts canceled or stopping" if self.parts else said


class JobEnded(Conflict):
    """`cancel` of a job that already finished or failed (facts: `job_id`, `state`: finished | failed)."""

    code = "job_ended"

    def __init__(self, message: str, job_id: str, state: str) -> None:
        super().__init__(message, facts={"job_id": job_id, "state": state})


def cancel(r: redis.Redis, job_id: str, asked_by: str = "narrate cancel") -> Canceled:
    """Cancel one job; returns what happened. Raises JobNotFound for an unknown or expired id and
    JobEnded (a Conflict) for a job that already ended."""
    with durable_writes(r):
        said = _cancel(r, job_id, asked_by)
        parts = (fetch(r, job_id).meta or {}).get("parts") or []  # a fanned-out book: its parts too
        stopped = [p for p in parts if _cancel_part(r, p, asked_by)]
        return Canceled(job_id, said, len(parts), len(stopped))


def _cancel_part(r: redis.Redis, job_id: str, asked_by: str) -> bool:
    try:
        return _cancel(r, job_id, asked_by) in ENDING
    except (JobEnded, JobNotFound):  # finished (or expired): nothing to stop
        return False


def _cancel(r: redis.Redis, job_id: str, asked_by: str) -> Cancel:
    key = Job.key_for(job_id)
    with r.pipeline() as p:
        while True:  # the job may change under us (a worker takes it, beats, saves progress): try again
            try:
                p.watch(key)
                job = fetch(r, job_id)
                state = job.get_status(refresh=False)
                _refuse_ended(job_id, state)
                if state == JobStatus.CANCELED:
                    return Cancel.ALREADY_CANCELED
                if state == JobStatus.STARTED:
                    if r.hexists(key, CANCEL_FIELD):
                        return Cancel.ALREADY_STOPPING
                    gone, _ = abandoned(r, job)
                    p.multi()
                    p.hset(key, CANCEL_FIELD, asked_by)
                    if gone:
                        mark_canceled(r, job, p)
                    p.execute()
                    return Cancel.CANCELED_GONE if gone else Cancel.STOPPING
                # queued, scheduled or deferred. The field too: a worker that popped it from its queue
                # a moment ago, and is about to start it, stops before its first batch.
                p.multi()
                p.hset(key, CANCEL_FIELD, asked_by)
                mark_canceled(r, job, p)
                p.execute()
                return Cancel.CANCELED
            except redis.WatchError:
                continue


def _refuse_ended(job_id: str, state: JobStatus | None) -> None:
    if state == JobStatus.FINISHED:
        raise JobEnded(
            f"job {job_id} already finished; there is nothing to cancel (narrate status {job_id})", job_id, "finished"
        )
    if state in (JobStatus.FAILED, JobStatus.STOPPED):
        raise JobEnded(
            f"job {job_id} already failed; there is nothing to cancel (narrate resume {job_id} would run it again)",
            job_id,
            "failed",
        )
