"""Parts of a fanned-out book whose host died: a host cannot hold another host's lock, so the
scheduler loop of every host (the `narrate worker` supervisor's thread, `narrate scheduler`) looks for
started part jobs whose worker stopped beating (``lifecycle.abandoned``: 3 missed heartbeats of that
worker plus its grace, both recorded in the job) and puts them back at the front of their queue, once
(``lifecycle.take_back``: not if another host's scan or a worker changed the job meanwhile). The
host that takes one skips every sentence already in Redis (jobs.task.part), so at most the sentences the
dead host had not uploaded are synthesized again.

Only part jobs are taken over this way: a whole book's checkpoints are on its host's disk, so it
waits for that host (its next worker requeues it at once) or for `narrate resume`. A host that was
only asleep and wakes up may finish a part that was taken over: both upload the same audio."""

from __future__ import annotations

import logging

import redis
from narrate.jobs.queue.books import part_of
from narrate.jobs.queue.lifecycle import abandoned, kept_canceled, take_back
from narrate.jobs.queue.rq_compat import started_job_ids
from narrate.jobs.server.records import find, queue
from rq.job import JobStatus
from rq.registry import StartedJobRegistry

log = logging.getLogger("narrate.jobs")


def take_over_parts(r: redis.Redis, queue_names: list[str]) -> list[str]:
    """Requeue the abandoned part jobs of these queues; returns their ids."""
    taken = []
    for name in queue_names:
        for job_id in started_job_ids(StartedJobRegistry(queue=queue(r, name))):
            job = find(r, job_id)
            if job is None or part_of(job) is None or job.get_status(refresh=False) != JobStatus.STARTED:
                continue
            gone, _ = abandoned(r, job)
            if not gone:
                continue
            if kept_canceled(r, job):  # canceled, then its host died
                continue
            if take_back(r, job, "crash"):  # not if another host's scan or a worker got there first
                taken.append(job_id)
    if taken:
        log.warning("requeued parts whose host stopped beating: %s", ", ".join(taken))
    return taken
