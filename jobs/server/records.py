"""rq's job records on the server, read one way everywhere: always with the JSON serializer (pickle
would let anyone who can write to Redis run code on a worker)."""

from __future__ import annotations

import redis
from narrate.jobs.errors import JobNotFound, NarrateError
from rq import Queue
from rq.exceptions import DeserializationError, NoSuchJobError
from rq.job import Job
from rq.serializers import JSONSerializer

SERIALIZER = JSONSerializer


def find(r: redis.Redis, job_id: str) -> Job | None:
    """The job, or None when there is none by that id (deleted, expired) or its record cannot be read."""
    try:
        return Job.fetch(job_id, connection=r, serializer=SERIALIZER)
    except (NoSuchJobError, DeserializationError, ValueError):
        return None


def fetch(r: redis.Redis, job_id: str) -> Job:
    """The job; raises JobNotFound (a one-line error) when there is none by that id."""
    try:
        return Job.fetch(job_id, connection=r, serializer=SERIALIZER)
    except NoSuchJobError:
        raise JobNotFound(f"no job {job_id!r} (wrong id, or it expired)") from None


def check_key_types(r: redis.Redis, want: dict[str, str]) -> None:
    """Each key is missing or of the type rq uses for it ("list", "zset", "hash", ...). A key of
    another type (written by something else) would make an enqueue fail halfway: a job hash saved
    as queued with no queue entry, which no command could run. Raises NarrateError naming the key."""
    with r.pipeline(transaction=False) as p:
        for k in want:
            p.type(k)
        kinds = [t.decode() if isinstance(t, bytes) else str(t) for t in p.execute()]
    for (k, kind), got in zip(want.items(), kinds, strict=True):
        if got not in ("none", kind):
            raise NarrateError(
                f"the server's key {k} holds a {got}, not the {kind} rq keeps there (something else wrote it); "
                f"nothing was enqueued: delete that key (redis-cli DEL {k}) or use another queue (NARRATE_QUEUE)"
            )


def queue(r: redis.Redis, name: str) -> Queue:
    """A narrate queue (JSON serializer)."""
    return Queue(name, connection=r, serializer=SERIALIZER)
