"""`narrate resume`: requeue failed jobs, abandoned jobs (their worker is gone) and books waiting
for (or failed by) their parts."""

from __future__ import annotations

import redis
from narrate.jobs.queue.books import is_book, resume_book
from narrate.jobs.queue.lifecycle import abandoned, kept_canceled, requeue_front, take_back
from narrate.jobs.queue.queues import queue_names
from narrate.jobs.queue.rq_compat import started_job_ids
from narrate.jobs.server.records import fetch, queue
from rq.job import JobStatus
from rq.registry import CanceledJobRegistry, FailedJobRegistry, StartedJobRegistry


def resume(r: redis.Redis, job_ids: list[str], queue_name: str) -> list[tuple[str, str]]:
    """Requeue the given jobs (or, with none given, every failed job and every started job whose
    worker is gone, of the queue's three priorities; a started job that was canceled before its
    worker died is recorded as canceled instead). Returns (job id, what happened) pairs."""
    asked = bool(job_ids)
    out = []
    if not job_ids:
        for name in queue_names(queue_name):
            q = queue(r, name)
            job_ids += FailedJobRegistry(queue=q).get_job_ids() + started_job_ids(StartedJobRegistry(queue=q))
            out += [  # said, not silently passed over: a person canceled them, so only their id resumes them
                (job_id, f"left alone (canceled: `narrate resume {job_id}` runs it again)")
                for job_id in CanceledJobRegistry(queue=q).get_job_ids()
            ]
    for job_id in dict.fromkeys(job_ids):
        job = fetch(r, job_id)
        state = job.get_status(refresh=False)
        if is_book(job) and state not in (
            JobStatus.STARTED,
            JobStatus.FINISHED,
        ):  # waiting for (or failed by) its parts
            out.append((job_id, resume_book(r, job)))
            continue
        if state in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
            requeue_front(r, job, "resume")
            out.append((job_id, "requeued"))
            continue
        if state == JobStatus.STARTED:
            gone, why = abandoned(r, job)
            if gone and not asked and kept_canceled(r, job):
                out.append((job_id, "canceled (it was canceled and its worker is gone)"))
            elif gone and take_back(r, job, "resume"):
                out.append((job_id, "requeued (its worker is gone)"))
            elif gone:
                out.append((job_id, "left alone (requeued or started again meanwhile)"))
            else:
                out.append((job_id, f"left alone (started: {why})"))
            continue
        out.append((job_id, f"left alone ({state.value if state else 'unknown'})"))
    return out
