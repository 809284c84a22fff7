"""Claims: the jobs a host's worker has taken off its queues, from the moment it takes one until the
job has ended there. A worker killed at any moment (kill -9, a power cut) loses no job.

rq's worker pops a job id off its queues (BLPOP over several queues) and only then registers the
job as started: a worker killed in between leaves a job whose hash says "queued" that no queue
holds. narrate's worker takes a job with one atomic move (a Lua script: the first job of its queues
in priority order, onto this host's claim list), writes its host into the job and only then starts
it; the claim goes when the job has ended on this worker (finished, failed, requeued, canceled).

At start, holding the host lock (so no worker of this host is alive), ``recover_claims`` looks at
what the last worker of this host left claimed: a job still "queued" that no queue holds goes back
to the front of its queue (it never began: no attempt is counted); a started one of this host is
left to ``lifecycle.recover_abandoned``; anything else (ended, or taken up since by another host)
only loses the claim."""

from __future__ import annotations

import logging

import redis
from narrate.jobs.queue.lifecycle import requeue_front
from narrate.jobs.scripts import load_script
from narrate.jobs.server.records import find, queue
from narrate.jobs.server.store import PREFIX
from rq.job import Job, JobStatus

log = logging.getLogger("narrate.claims")

_CLAIM = load_script("claim")


def claim_key(host_id: str) -> str:
    return f"{PREFIX}claims:{host_id}"


def claim_next(r: redis.Redis, queue_keys: list[str], host_id: str) -> tuple[str, str] | None:
    """Move the first job of the first non-empty queue onto this host's claim list, atomically:
    (queue key, job id), or None when every queue is empty. A job left on the claim list comes
    first, with an empty queue key."""
    got = r.eval(_CLAIM, len(queue_keys) + 1, *queue_keys, claim_key(host_id))
    if not got:
        return None
    key, job_id = (x.decode() if isinstance(x, bytes) else x for x in got)
    return key, job_id


def release(r: redis.Redis | redis.client.Pipeline, host_id: str, job_id: str) -> None:
    r.lrem(claim_key(host_id), 0, job_id)


def give_back(r: redis.Redis, queue_key: str, host_id: str, job_id: str) -> None:
    """Undo a claim of a job that did not begin: back at the front of its queue."""
    with r.pipeline() as p:
        release(p, host_id, job_id)
        p.lpush(queue_key, job_id)
        p.execute()


def never_begun(r: redis.Redis, job: Job) -> bool:
    """A claimed job that still waits: "queued", and its queue does not hold it (the claim took it)."""
    return job.get_status(refresh=False) == JobStatus.QUEUED and r.lpos(queue(r, job.origin).key, job.id) is None


def recover_claims(r: redis.Redis, host_id: str) -> list[str]:
    """What the last worker of this host left claimed (call it holding the host lock). Returns the
    job ids put back into their queues."""
    key = claim_key(host_id)
    back = []
    for raw in r.lrange(key, 0, -1):
        assert isinstance(raw, bytes)  # narrate's clients return bytes (decode_responses off)
        job_id = raw.decode()
        job = find(r, job_id)
        if job is None:
            release(r, host_id, job_id)
            continue
        ours = job.meta.get("host") in (None, host_id)  # another host's since (a part taken over): not ours
        if ours and never_begun(r, job):
            requeue_front(r, job, "claimed")
            back.append(job_id)
        release(r, host_id, job_id)  # a started one of this host: recover_abandoned's; else not ours now
    if back:
        log.warning("requeued jobs the last worker of this host took but never began: %s", ", ".join(back))
    return back
