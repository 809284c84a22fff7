"""A waiting job moved to another priority: a queued one from its queue's list to the end of the
other priority's list, a scheduled one from its queue's scheduled registry to the other's (same due
time). One MULTI under WATCH: a worker taking the job meanwhile makes the move fail cleanly (the
job runs at the priority it had), never lose it or put it in two queues."""

from __future__ import annotations

import redis
from narrate.jobs.errors import BadInput, JobNotFound
from narrate.jobs.queue.queues import check_priority, priority_of, queue_for, queue_names
from narrate.jobs.server.durability import durable_writes
from narrate.jobs.server.records import queue
from narrate.jobs.server.store import text
from rq.job import Job
from rq.registry import ScheduledJobRegistry

QUEUES_KEY = "rq:queues"


def set_priority(r: redis.Redis, base: str, job_id: str, priority: str) -> str:
    """Move a queued or scheduled job of `base`'s queues to `priority`; what happened, in words.
    Raises JobNotFound (no such job) or BadInput (a bad priority, or a job no longer waiting)."""
    priority = check_priority(priority)
    key = Job.key_for(job_id)
    with durable_writes(r), r.pipeline() as p:
        for _ in range(20):
            try:
                p.watch(key)
                status, origin = (text(v) if v is not None else None for v in p.hmget(key, ["status", "origin"]))
                if status is None or origin is None:
                    raise JobNotFound(f"no job {job_id!r} (wrong id, or it expired)")
                if origin not in queue_names(base):
                    raise BadInput(f"job {job_id} is in queue {origin}, not one of {base}'s")
                if status not in ("queued", "scheduled"):
                    raise BadInput(f"job {job_id} is {status}: only a queued or scheduled job changes priority")
                if priority_of(origin) == priority:
                    return f"{job_id} is already {priority} priority"
                old, new = queue(r, origin), queue(r, queue_for(base, priority))
                p.watch(old.key, ScheduledJobRegistry(queue=old).key)
                due = p.zscore(ScheduledJobRegistry(queue=old).key, job_id) if status == "scheduled" else None
                if status == "queued" and p.lpos(old.key, job_id) is None:
                    raise BadInput(f"job {job_id} is being taken by a worker (it runs at {priority_of(origin)})")
                if status == "scheduled" and due is None:
                    raise BadInput(f"job {job_id} is being moved to its queue; try again in a moment")
                p.multi()
                if due is None:
                    p.lrem(old.key, 1, job_id)
                    p.rpush(new.key, job_id)
                else:
                    p.zrem(ScheduledJobRegistry(queue=old).key, job_id)
                    p.zadd(ScheduledJobRegistry(queue=new).key, {job_id: due})
                p.sadd(QUEUES_KEY, new.key)
                p.hset(key, "origin", new.name)
                p.execute()
                return f"{job_id} moved to {priority} priority"
            except redis.WatchError:
                p.reset()
        raise BadInput(f"job {job_id} kept changing; try again")
