"""``narrate info``: the server, each narrate queue with its jobs per state, the workers (host,
current job, model, the BLAS of their MLX float32 products); the CLI adds this host's BLAS and the
recurring schedules (jobs.schedules.definitions.summary).
Read-only; a handful of round trips."""

from __future__ import annotations

import redis
from narrate.jobs.api.listing import REGISTRIES
from narrate.jobs.queue.queues import priority_of, queue_names
from narrate.jobs.queue.runs import run_queues
from narrate.jobs.server.connection import Connection
from narrate.jobs.server.records import queue
from rq.job import Job
from rq.serializers import JSONSerializer
from rq.worker import Worker


def info(conn: Connection, base_queue: str) -> dict:
    r = conn.redis
    assert r is not None
    return {
        "server": server(conn),
        "queues": queue_counts(r, base_queue),
        "workers": workers(r, base_queue),
    }


def server(conn: Connection) -> dict:
    """Which server (the embedded one, or NARRATE_REDIS_URL with any password hidden) and its version."""
    r = conn.redis
    assert r is not None
    try:
        about = r.info("server")
    except redis.RedisError:
        about = {}
    return {
        "kind": "embedded" if conn.embedded is not None else "url",
        "url": conn.url,  # redacted (jobs.server.connection.redact)
        "version": about.get("valkey_version") or about.get("redis_version"),
    }


def queue_counts(r: redis.Redis, base_queue: str) -> list[dict]:
    """Jobs per state of each of the queue's three priorities (registry sizes: an entry whose job
    expired a moment ago is counted until rq's maintenance drops it)."""
    names = queue_names(base_queue) + run_queues(r)  # and `narrate run`'s private queues (jobs/queue/runs.py)
    with r.pipeline(transaction=False) as p:
        for name in names:
            q = queue(r, name)
            p.llen(q.key)
            for registry in REGISTRIES.values():
                p.zcard(registry(queue=q).key)
        counts = p.execute()
    width = 1 + len(REGISTRIES)
    rows = []
    for i, name in enumerate(names):
        mine = counts[i * width : (i + 1) * width]
        rows.append(
            {"name": name, "priority": priority_of(name), "queued": mine[0]}
            | dict(zip(REGISTRIES, mine[1:], strict=True))
        )
    return rows


def workers(r: redis.Redis, base_queue: str) -> list[dict]:
    """The workers that take any of the queue's three priorities."""
    mine = set(queue_names(base_queue))
    found = [w for w in Worker.all(connection=r, serializer=JSONSerializer) if mine & set(w.queue_names())]
    with r.pipeline(transaction=False) as p:
        for w in found:
            p.hmget(w.key, ["narrate_model", "narrate_blas"])
        fields = [[v.decode() if v else None for v in row] for row in p.execute()]
    # rq's public read of a worker's job: rq 2.12 keeps it in the worker's hash, rq 3.0 in its executions' index
    current = [(w.get_current_job_id(), model) for w, (model, _) in zip(found, fields, strict=True)]
    with r.pipeline(transaction=False) as p:
        for job_id, _ in current:
            p.hget(Job.key_for(job_id or "-"), "meta")
        metas = [JSONSerializer.loads(m) if m else {} for m in p.execute()]
    return [
        {
            "name": w.name,
            "host": w.hostname,
            "pid": w.pid,
            "state": w.get_state(),
            "queues": w.queue_names(),
            "current_job": job_id,
            "current_document": meta.get("document") if job_id else None,
            "progress": meta.get("progress") if job_id else None,
            "model": (meta.get("model") if job_id else None) or default_model,  # the job's, else the worker's
            "last_heartbeat": w.last_heartbeat.isoformat() if w.last_heartbeat else None,
            "blas": row[1],  # what its MLX float32 products use (worker/blas.py); None: a worker before it said
        }
        for w, (job_id, default_model), meta, row in zip(found, current, metas, fields, strict=True)
    ]
