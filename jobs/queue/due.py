"""Jobs scheduled for later (`submit --at/--in`) are kept in rq's ScheduledJobRegistry of their
queue; ``enqueue_due`` moves the ones whose time has come into their queue. Any number of
processes may call it at once: a job is moved by whoever removes it from the registry (ZREM is
atomic), so it is enqueued exactly once."""

from __future__ import annotations

import redis
from narrate.jobs.queue.lifecycle import queue
from narrate.jobs.queue.rq_compat import enqueue_existing
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry
from rq.serializers import JSONSerializer
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
            try:
                job = Job.fetch(job_id, connection=r, serializer=JSONSerializer)
            except Exception:  # noqa: BLE001 - deleted meanwhile: nothing to run
                continue
            if job.get_status(refresh=False) != JobStatus.SCHEDULED:
                continue  # canceled or deleted meanwhile
            with r.pipeline() as p:
                enqueue_existing(q, job, p)
                p.execute()
            moved.append(job_id)
    return moved
