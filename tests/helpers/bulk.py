"""Many jobs in Redis at once, as narrate leaves them (real rq records, JSON serializer, narrate's
meta): finished ones with their results, output records and index of files; queued ones. And the
round trips a read of them takes, counted. For the tests and benchmarks of scale (test_list.py,
test_list_pages.py, test_job_view_scale.py, tests/bench/scale_bench.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import redis
from narrate.jobs.api.submit import JOB_FUNCTION
from narrate.jobs.outputs import ownership, recorded
from narrate.jobs.server import schema
from narrate.jobs.server.records import queue
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import FinishedJobRegistry
from rq.results import Result
from rq.serializers import JSONSerializer

from helpers.servers import external_redis_url


def finish_many(r: redis.Redis, n: int, offset: int = 0) -> list[str]:
    """N finished narrate jobs (record, result, finished registry, output records and index, the index's
    schema version)."""
    q = queue(r, "narrate")
    ids = [f"done-{offset + i:05d}" for i in range(n)]
    now = datetime.now(UTC)
    with r.pipeline() as p:
        for job_id in ids:
            out = f"books/{job_id}.mp3"
            data = Queue.prepare_data(
                JOB_FUNCTION,
                ({"document": "0" * 64, "voice": "0" * 64, "output": out},),
                job_id=job_id,
                description=f"narrate {job_id}.txt (3 sentences) -> {out}",
                meta={
                    "document": f"{job_id}.txt",
                    "output": out,
                    "progress": {"done": 3, "total": 3, "audio_seconds": 2.0},
                },
            )
            job = Job.create(
                data.func,
                args=data.args,
                id=job_id,
                connection=r,
                serializer=JSONSerializer,
                description=data.description,
                meta=data.meta,
                origin=q.name,
            )
            job.set_status(JobStatus.FINISHED, pipeline=p)
            job.ended_at = now
            job.save(pipeline=p)
            Result.create(
                job,
                Result.Type.SUCCESSFUL,
                ttl=3600,
                pipeline=p,
                return_value={
                    "output": f"/root/{out}",
                    "output_relative": out,
                    "duration_seconds": 2.0,
                    "chapters": [],
                },
            )
            p.zadd(FinishedJobRegistry(q.name, connection=r).key, {job_id: now.timestamp() + 3600})
            p.hset(ownership.key(out), mapping={"job": job_id, "sha256": "0" * 64})
            p.sadd(ownership.files_key(job_id), out)
        p.hset(schema.SCHEMA, recorded.FILES_INDEX, recorded.FILES_INDEX_VERSION)  # the index built (as it is by now)
        p.execute()
    return ids


def enqueue_many(r: redis.Redis, n: int, name: str = "narrate", offset: int = 0) -> list[str]:
    """N queued narrate jobs, in one pipeline."""
    q = queue(r, name)
    data = [
        Queue.prepare_data(
            JOB_FUNCTION,
            ({"document": "0" * 64, "voice": "0" * 64, "output": f"bulk/{i}.mp3"},),
            job_id=f"bulk-{offset + i:05d}",
            description=f"narrate bulk {i}.txt (100 sentences) -> bulk/{i}.mp3",
            meta={
                "progress": {"done": 0, "total": 100, "audio_seconds": 0.0},
                "document": f"{i}.txt",
                "output": f"bulk/{i}.mp3",
            },
        )
        for i in range(n)
    ]
    with r.pipeline() as p:
        q.enqueue_many(data, pipeline=p)
        p.execute()
    return [f"bulk-{offset + i:05d}" for i in range(n)]


class Counting(redis.Connection):
    """A connection that counts its round trips (one per command, one per pipeline)."""

    sent = 0

    def send_packed_command(self, command, check_health=True):
        Counting.sent += 1
        return super().send_packed_command(command, check_health)


def counted(fn):
    """(the round trips `fn(r)` takes on a fresh connection to the tests' Redis, what it returned)."""
    r = redis.Redis(connection_pool=redis.ConnectionPool.from_url(external_redis_url(), connection_class=Counting))
    r.ping()  # the connection's handshake is not the read's
    before = Counting.sent
    got = fn(r)
    r.close()
    return Counting.sent - before, got
