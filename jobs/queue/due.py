"""Jobs scheduled for later (`submit --at/--in`) are kept in rq's ScheduledJobRegistry of their
queue; ``enqueue_due`` moves the ones whose time has come into their queue. Any number of
processes may call it at once: a job is moved by whoever removes it from the registry (ZREM is
atomic), so it is enqueued exactly once."""

from __future__ import annotations

import redis
from narrate.jobs.queue.rq_compat import enqueue_existing
from narrate.jobs.server.records import find, queue
from rq.job import JobStatus
from rq.registry import ScheduledJobRegistry
from rq.utils import current_timestamp


def enqueue_due(r: redis.Redis, queue_names: list[str]) -> list[str]:
    """Enqueue every scheduled job of these queues that is due; returns their ids."""
    moved = []
    for name in queue_names:
        q = queue(r, name)
        registry = ScheduledJobRegistry(queue=q)
        for job_id in registry.get_jobs_to_schedule(current_timestamp()):
            if not r.zrem(registry.key, job_id):
                continue  # another process took it
            job = find(r, job_id)
            if job is None or job.get_status(refresh=False) != JobStatus.SCHEDULED:
                continue  # canceled or deleted meanwhile
            with r.pipeline() as p:
                enqueue_existing(q, job, p)
                p.execute()
            moved.append(job_id)
    return moved
