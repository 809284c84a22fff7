"""A redo's job (`narrate redo`, jobs/api/redo_request.py) takes the place of the job it redoes once its files are in
place: the old job's feed episodes become the new job's, each at the same place in its feed, and the old job's
record says by which job it was superseded (`narrate status OLD`). Its library export is replaced by the job's own
export (jobs/task/job.py, jobs/library/export.py ``replaces``)."""

from __future__ import annotations

import logging

import redis
from narrate.jobs.feeds import store as feeds
from narrate.jobs.server.records import find

REDO_OF, SUPERSEDED_BY = "redo_of", "superseded_by"  # the new job's meta names the old; the old's, the new

log = logging.getLogger("narrate.jobs")


def take_over(r: redis.Redis, job_id: str, old_id: str) -> list[str]:
    """The feeds whose episode of `old_id` is now `job_id`'s; the old job is marked superseded."""
    moved = feeds.replace(r, old_id, job_id)
    old = find(r, old_id)
    if old is not None:  # gone (expired, deleted): nothing to mark
        old.meta[SUPERSEDED_BY] = job_id
        old.save_meta()
    if moved:
        log.info("job %s: took the place of job %s in feed(s) %s", job_id, old_id, ", ".join(moved))
    return moved
