"""The private queues of `narrate run`: one a run, named RUN_PREFIX + a random part, that no worker
but the run's own takes from. Each is recorded with its owner (host id and process id) while it
lives, so that the jobs on them are listed with everyone's (`narrate list`, `info`), a redo or
resume of a run's job goes to the base queue that workers serve (never to a private queue nobody
serves any more), and a run killed before it could clean up (SIGKILL, a power cut) leaves nothing
behind once the next `run` or worker on its host starts: its private queue and unfinished job are
removed as the run would have removed them (its checkpoints stay: the same command continues where
it stopped)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable

import redis
from narrate.jobs.errors import JobNotFound
from narrate.jobs.server.records import fetch, queue
from rq.queue import Queue

RUN_PREFIX = "narrate-run-"
OWNERS = "narrate:run-queues"  # hash: private queue name -> "host_id pid"
ENDED = ("finished", "failed")


def is_run_queue(name: str) -> bool:
    return name.startswith(RUN_PREFIX)


def base_queue_of(origin: str, default: str) -> str:
    """The queue a job that lived in `origin` goes back to: its own, or `default` for a run's private one."""
    return default if is_run_queue(origin) else origin


def new_run_queue(r: redis.Redis, host_id: str) -> Queue:
    """A private queue for this process, recorded with its owner."""
    name = f"{RUN_PREFIX}{uuid.uuid4().hex[:12]}"
    r.hset(OWNERS, name, f"{host_id} {os.getpid()}")
    return queue(r, name)


def run_queues(r: redis.Redis) -> list[str]:
    """The private queues that exist now (recorded, or known to rq), in one round trip."""
    with r.pipeline(transaction=False) as p:  # one round trip
        p.hkeys(OWNERS)
        p.smembers("rq:queues")
        keys, known = p.execute()
    names = {n.decode() for n in keys} | {n.decode().removeprefix(Queue.redis_queue_namespace_prefix) for n in known}
    return sorted(n for n in names if is_run_queue(n))


def remove_run_queue(r: redis.Redis, q: Queue, job_ids: list[str]) -> None:
    """The private queue gone with its registries and owner record; of `job_ids`, those that did not
    finish are deleted (their checkpoints stay)."""
    unfinished = []
    for job_id in job_ids:
        with contextlib.suppress(JobNotFound):
            job = fetch(r, job_id)
            status = job.get_status(refresh=False)
            if job.origin == q.name and (status is None or status.value not in ENDED):  # not moved away (resume)
                unfinished.append(job_id)
    q.delete(delete_jobs=bool(unfinished))
    registries = (
        q.started_job_registry,
        q.finished_job_registry,
        q.failed_job_registry,
        q.deferred_job_registry,
        q.scheduled_job_registry,
        q.canceled_job_registry,
    )
    r.delete(*[reg.key for reg in registries])
    r.hdel(OWNERS, q.name)
    for job_id in unfinished:  # queued ones went with the queue; a started one is deleted here
        with contextlib.suppress(JobNotFound):
            fetch(r, job_id).delete()


def sweep_dead_runs(r: redis.Redis, host_id: str, alive: Callable[[int], bool]) -> list[str]:
    """Remove the private queues of this host's runs whose process is gone (`alive(pid)` says); the
    names of those removed."""
    gone = []
    owners: dict[bytes, bytes] = r.hgetall(OWNERS)  # type: ignore[assignment]  # bytes: decode_responses is off
    for raw_name, raw_owner in owners.items():
        name, owner = raw_name.decode(), raw_owner.decode().split()
        if len(owner) != 2 or owner[0] != host_id or not owner[1].isdigit() or alive(int(owner[1])):
            continue
        q = queue(r, name)
        job_ids = q.get_job_ids() + q.started_job_registry.get_job_ids() + q.scheduled_job_registry.get_job_ids()
        remove_run_queue(r, q, job_ids)
        gone.append(name)
    return gone
