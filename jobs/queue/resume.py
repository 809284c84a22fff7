"""`narrate resume`: requeue failed jobs, abandoned jobs (their worker is gone) and books waiting
for (or failed by) their parts. What it did to each job is data (`Resumed`: a `Resume` outcome and
its facts), which each front end words: the command line prints a line, the HTTP API answers 409
for a job left alone."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import redis
from narrate.jobs.counts import count
from narrate.jobs.queue.books import is_book, resume_book
from narrate.jobs.queue.lifecycle import abandoned, kept_canceled, move_queued, requeue_front, take_back
from narrate.jobs.queue.queues import queue_names
from narrate.jobs.queue.rq_compat import started_job_ids
from narrate.jobs.queue.runs import is_run_queue
from narrate.jobs.server.records import fetch, queue
from rq.job import JobStatus
from rq.registry import CanceledJobRegistry, FailedJobRegistry, StartedJobRegistry
from rq.worker import Worker


class Resume(enum.Enum):
    """What `resume` did to one job."""

    REQUEUED = "requeued"  # failed, stopped or canceled: at the front of its queue again
    REQUEUED_GONE = "requeued_gone"  # started, but its worker is gone: taken back and requeued
    BOOK_STITCHES = "book_stitches"  # a book whose parts are all done: requeued, it stitches now
    BOOK_WAITS = "book_waits"  # a book: its failed parts requeued, it waits for its unfinished ones
    KEPT_CANCELED = "kept_canceled"  # canceled before its worker died: recorded canceled, not requeued
    LEFT_CANCELED = "left_canceled"  # canceled and not named: only its id resumes it
    LEFT_RACED = "left_raced"  # requeued or started again meanwhile
    LEFT_RUNNING = "left_running"  # started, and its worker is alive (facts: why)
    LEFT_ENDED = "left_ended"  # in a state with nothing to resume: finished, queued, scheduled (facts: state)

    @property
    def left_alone(self) -> bool:
        """Nothing was requeued: there was nothing to resume."""
        return self in (Resume.LEFT_CANCELED, Resume.LEFT_RACED, Resume.LEFT_RUNNING, Resume.LEFT_ENDED)


# The command line's words of the outcomes that need no facts.
WORDS = {
    Resume.REQUEUED: "requeued",
    Resume.REQUEUED_GONE: "requeued (its worker is gone)",
    Resume.KEPT_CANCELED: "canceled (it was canceled and its worker is gone)",
    Resume.LEFT_RACED: "left alone (requeued or started again meanwhile)",
}


@dataclass(frozen=True)
class Resumed:
    """The outcome of `resume` for one job, with the facts its words need."""

    job_id: str
    outcome: Resume
    state: str = ""  # LEFT_ENDED: the job's state (finished, queued, ...)
    why: str = ""  # LEFT_RUNNING: why its worker counts as alive
    parts: int = 0  # a book: its parts
    parts_requeued: int = 0  # BOOK_WAITS: those requeued now
    parts_waiting: int = 0  # BOOK_WAITS: those it waits for

    def __str__(self) -> str:
        """The command line's words."""
        o = self.outcome
        if o is Resume.BOOK_STITCHES:
            return f"requeued (all {self.parts} parts are done: it stitches now)"
        if o is Resume.BOOK_WAITS:
            return (
                f"requeued {count(self.parts_requeued, 'part')}; the book waits for {self.parts_waiting} of "
                f"{count(self.parts, 'part')}"
            )
        if o is Resume.LEFT_CANCELED:
            return f"left alone (canceled: `narrate resume {self.job_id}` runs it again)"
        if o is Resume.LEFT_RUNNING:
            return f"left alone (started: {self.why})"
        if o is Resume.LEFT_ENDED:
            return f"left alone ({self.state})"
        return WORDS[o]


def resume(r: redis.Redis, job_ids: list[str], queue_name: str) -> list[Resumed]:
    """Requeue the given jobs (or, with none given, every failed job and every started job whose
    worker is gone, of the queue's three priorities; a started job that was canceled before its
    worker died is recorded as canceled instead). Returns what happened to each; raises JobNotFound
    for an unknown or expired id."""
    asked = bool(job_ids)
    out = []
    if not job_ids:
        for name in queue_names(queue_name):
            q = queue(r, name)
            job_ids += FailedJobRegistry(queue=q).get_job_ids() + started_job_ids(StartedJobRegistry(queue=q))
            out += [  # said, not silently passed over: a person canceled them, so only their id resumes them
                Resumed(job_id, Resume.LEFT_CANCELED) for job_id in CanceledJobRegistry(queue=q).get_job_ids()
            ]
    for job_id in dict.fromkeys(job_ids):
        job = fetch(r, job_id)
        state = job.get_status(refresh=False)
        if is_book(job) and state not in (
            JobStatus.STARTED,
            JobStatus.FINISHED,
        ):  # waiting for (or failed by) its parts
            did = resume_book(r, job)
            outcome = Resume.BOOK_WAITS if did.waiting else Resume.BOOK_STITCHES
            out.append(
                Resumed(job_id, outcome, parts=did.parts, parts_requeued=did.requeued, parts_waiting=did.waiting)
            )
            continue
        into = queue_name if is_run_queue(job.origin) else None  # a `narrate run` job: to the workers' queue
        if state in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
            requeue_front(r, job, "resume", into=into)
            out.append(Resumed(job_id, Resume.REQUEUED))
            continue
        if state == JobStatus.STARTED:
            gone, why = abandoned(r, job)
            if gone and not asked and kept_canceled(r, job):
                out.append(Resumed(job_id, Resume.KEPT_CANCELED))
            elif gone and take_back(r, job, "resume", into=into):
                out.append(Resumed(job_id, Resume.REQUEUED_GONE))
            elif gone:
                out.append(Resumed(job_id, Resume.LEFT_RACED))
            else:
                out.append(Resumed(job_id, Resume.LEFT_RUNNING, why=why))
            continue
        if asked and state == JobStatus.QUEUED and into and not Worker.all(queue=queue(r, job.origin)):
            move_queued(r, job, into)  # waiting on a run's private queue that nobody serves
            out.append(Resumed(job_id, Resume.REQUEUED))
            continue
        out.append(Resumed(job_id, Resume.LEFT_ENDED, state=state.value if state else "unknown"))
    return out
