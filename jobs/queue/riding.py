"""A clip job (a speech request's line, a voice preview) taken by a worker that is busy with a book,
to ride along the book's batches (jobs.book.synthesis.Rider) instead of waiting hours behind it.

Taking it is one atomic move from wherever it waits in its queue onto the host's claim list
(jobs.queue.claims), the same list a worker's own claims go on: it stays "queued" while it rides, so
a worker killed meanwhile loses nothing (``claims.recover_claims`` puts it back at the front of its
queue). Done, it is marked finished as rq's worker would mark it (status, result, the finished
registry) and its claim goes; given back (the book ended first, or cannot speak its voice), it goes
back to the front of its queue, whole, for a worker to run on its own.

A clip job put on a queue (enqueued, given back) is signalled on the queue's waiting stream
(``signal_waiting``): the clip watches of the workers running books block on it (XREAD BLOCK) and
read the queue only when woken, instead of every tenth of a second."""

from __future__ import annotations

import logging

import redis
from narrate.jobs.queue import claims
from narrate.jobs.scripts import load_script
from narrate.jobs.server.records import queue
from narrate.jobs.server.store import PREFIX
from rq.defaults import DEFAULT_RESULT_TTL
from rq.job import Job, JobStatus
from rq.results import Result
from rq.utils import now

log = logging.getLogger("narrate.jobs")

_TAKE = load_script("take_one")
WAITING_KEEP = 16  # entries a waiting stream keeps: each only wakes the watches, who then read the queue


def waiting_key(queue_name: str) -> str:
    """The stream that tells the clip watches of queue `queue_name`'s workers that a clip job waits there."""
    return f"{PREFIX}clips-waiting:{queue_name}"


def signal_waiting(r: redis.Redis, queue_name: str, job_id: str) -> None:
    """Wake the clip watches of queue `queue_name`: clip job `job_id` was just put there."""
    r.xadd(waiting_key(queue_name), {"job": job_id}, maxlen=WAITING_KEEP, approximate=False)


def take(r: redis.Redis, queue_key: str, host_id: str, job_id: str) -> bool:
    """Take `job_id` out of its queue onto this host's claim list: False if the queue no longer holds it."""
    return bool(r.eval(_TAKE, 2, queue_key, claims.claim_key(host_id), job_id))


def finish(r: redis.Redis, job: Job, result: dict, worker_name: str, host_id: str) -> bool:
    """The job ended well on a worker that did not dequeue it: finished, its result stored, unclaimed.
    False (only unclaimed) when it was canceled or deleted while it rode: it stays so."""
    if r.hget(job.key, "status") != JobStatus.QUEUED.value.encode():
        claims.release(r, host_id, job.id)
        return False
    ttl = job.result_ttl if job.result_ttl is not None else DEFAULT_RESULT_TTL
    job.ended_at = now()
    job.worker_name = worker_name
    with r.pipeline() as p:
        job.set_status(JobStatus.FINISHED, pipeline=p)
        job.save(pipeline=p)
        Result.create(job, Result.Type.SUCCESSFUL, ttl=ttl, return_value=result, worker_name=worker_name, pipeline=p)
        if ttl != 0:
            job.finished_job_registry.add(job, ttl, p)
        claims.release(p, host_id, job.id)
        p.execute()
    return True


def give_back(r: redis.Redis, job: Job, host_id: str) -> None:
    """The taken job did not end here: back at the front of its queue, as it was (the watches told)."""
    claims.give_back(r, queue(r, job.origin).key, host_id, job.id)
    signal_waiting(r, job.origin, job.id)
