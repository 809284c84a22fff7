"""A narration job's life after it is enqueued: the meta narrate keeps on it, putting it back at the
front of its queue (for three reasons, through one function), when a started job counts as
abandoned, how crashes are counted (poison pills), and ``resume``.

States are rq's (queued, scheduled, started, finished, failed, stopped, canceled). What narrate adds
lives in ``job.meta`` (schema: ``JobMeta``), and a cancel request of a running job in the job hash's
own field ``narrate_cancel`` (``job.meta`` is rewritten whole by the worker that runs the job, so
nobody else may write it while the job runs).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Literal, TypedDict, cast

import redis
from narrate.jobs.queue.rq_compat import enqueue_at_front, started_executions, started_job_ids
from narrate.jobs.scripts import load_script
from narrate.jobs.server import store
from narrate.jobs.server.records import find, queue
from narrate.jobs.settings import DAY_S, default
from redis.client import Pipeline
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import (
    CanceledJobRegistry,
    DeferredJobRegistry,
    FailedJobRegistry,
    ScheduledJobRegistry,
    StartedJobRegistry,
)
from rq.utils import current_timestamp, now, utcformat
from rq.worker import Worker

log = logging.getLogger("narrate.jobs")

ABANDONED_AFTER_BEATS = 3  # a started job whose worker missed this many heartbeats is abandoned
EXTERNAL_KILL_WEIGHT = 0.1  # a SIGKILL from outside says little about the job: a tenth of a crash
CANCEL_FIELD = "narrate_cancel"  # job hash field: who asked a running job to stop for good


class Progress(TypedDict, total=False):
    done: int  # sentences with a checkpoint
    total: int  # sentences in the document
    audio_seconds: float  # audio synthesized so far by this attempt
    realtime_factor: float | None  # audio seconds / synthesis wall seconds of this attempt
    eta_seconds: float | None  # estimated seconds until every sentence is synthesized (this attempt's pace)


class JobMeta(TypedDict, total=False):
    """What narrate keeps in ``job.meta`` (all optional; writer in brackets)."""

    progress: Progress  # [submit: zeros; job: as sentences finish]
    max_retries: int  # [submit] rq retries after an exception; ``resume`` restores them
    attempts: int  # [job: +1 at each start; warm stop: -1; resume: 0] attempts begun
    host: str  # [job] identity of the host running it (narrate.worker.process.host); recovery compares it
    heartbeat_s: int  # [job] heartbeat interval of the worker running it: when it counts as abandoned
    grace_s: int  # [job] its worker's NARRATE_ABANDONED_GRACE_S: abandoned after 3 missed beats + this
    book: str  # [submit] a part job's book (jobs.fanout.split)
    part: int  # [submit] a part job's number in its book
    parts: list[str]  # [submit] a fanned-out book's part job ids (the book waits for them, then stitches)
    in_flight: list[int]  # [job] sentence indices of the batch being synthesized
    crashes: float  # [recovery] crashes in a row on the same batch (external SIGKILLs: 0.1)
    crash_in_flight: list[int] | None  # [recovery] the batch those crashes happened on
    error: str  # [job, recovery] one-line reason of the last failure
    document: str  # [submit] the document's file name, as submitted
    output: str  # [submit] the output path relative to the output root
    model: str  # [job] the model the running (or last) attempt loaded, and its quantization


Why = Literal["resume", "warm_stop", "crash", "claimed"]


def requeue_front(r: redis.Redis, job: Job, why: Why, pipeline: Pipeline | None = None, into: str | None = None) -> Job:
    """Put a job back at the front of its queue (or of queue `into`); it resumes from its checkpoints.

    Attempt accounting by reason: ``resume`` (a person asked) starts afresh (attempts 0, rq retries
    restored, error and cancel request cleared); ``warm_stop`` (the worker was asked to stop) gives
    the attempt back; ``crash`` (recovery after the worker died) keeps the count and the crash tally
    the caller set; ``claimed`` (its worker died after taking it, before it began) counts nothing."""
    if why == "resume":
        fresh_start(job)
    elif why == "warm_stop":
        job.meta["attempts"] = max(0, int(job.meta.get("attempts", 1)) - 1)
    p = pipeline if pipeline is not None else r.pipeline()
    leave_registries(r, job, p)  # the enqueue below saves the whole job, meta included, in the same transaction
    if why == "resume":
        p.hdel(job.key, CANCEL_FIELD)
    enqueue_at_front(queue(r, into or job.origin), job, p)
    if pipeline is None:
        p.execute()
    return job


def move_queued(r: redis.Redis, job: Job, into: str) -> None:
    """A queued job taken out of its queue and put at the front of queue `into` (a person asked)."""
    with r.pipeline() as p:
        p.lrem(queue(r, job.origin).key, 0, job.id)
        requeue_front(r, job, "resume", pipeline=p, into=into)
        p.execute()


def reschedule(r: redis.Redis, job: Job, at: datetime, into: str | None = None) -> Job:
    """A failed, stopped or canceled job, scheduled again for `at` (a person asked: a fresh start)."""
    fresh_start(job)
    q = queue(r, into or job.origin)
    job.save_meta()
    with r.pipeline() as p:
        leave_registries(r, job, p)
        p.hdel(job.key, CANCEL_FIELD)
        job.origin = q.name
        job.set_status(JobStatus.SCHEDULED, pipeline=p)
        job.save(pipeline=p)
        p.zadd(ScheduledJobRegistry(queue=q).key, {job.id: int(at.timestamp())})
        p.execute()
    return job


def take_back(r: redis.Redis, job: Job, why: Why, into: str | None = None) -> bool:
    """Requeue (at the front) a started job judged abandoned, only if it is still started by the worker
    it was judged by: between reading it and requeueing it, another host's takeover, a person's
    `resume` or its own host's recovery may have requeued it, and a worker may have started it again.
    Without this check two of them requeued one job twice and two hosts ran it at once. Atomic (WATCH
    on the job's hash, as `cancel` does). Returns whether it requeued the job."""
    seen = job.worker_name or ""
    with r.pipeline() as p:
        try:
            p.watch(job.key)
            replies = cast("list[bytes | None]", p.hmget(job.key, ["status", "worker_name"]))
            status, worker = (v.decode() if v else "" for v in replies)  # bytes: decode_responses is off
            if status != JobStatus.STARTED.value or worker != seen:
                return False
            p.multi()
            requeue_front(r, job, why, pipeline=p, into=into)
            p.execute()
        except redis.WatchError:
            return False
    return True


def fresh_start(job: Job) -> None:
    meta: JobMeta = job.meta  # type: ignore[assignment]
    meta.pop("error", None)
    meta["attempts"] = 0
    meta.pop("crashes", None)
    meta.pop("crash_in_flight", None)
    job.retries_left = int(meta.get("max_retries", 0))
    job.ended_at = None  # it runs again: an end before its next start would read as a negative run time


def leave_registries(r: redis.Redis, job: Job, p: Pipeline) -> None:
    """Take the job out of its queue's failed, canceled and started registries (before it moves)."""
    q = queue(r, job.origin)
    started = StartedJobRegistry(queue=q)
    members = started_executions(started, job.id)
    FailedJobRegistry(queue=q).remove(job, pipeline=p)
    p.zrem(CanceledJobRegistry(queue=q).key, job.id)
    p.zrem(DeferredJobRegistry(queue=q).key, job.id)  # a fanned-out book waiting for its parts
    if members:
        p.zrem(started.key, *members)


# A job its worker runs stays that worker's while it is started by it, and in these states too: rq's registry
# cleanup fails a job whose worker stopped beating for long and nobody runs it then (its worker, back, finishes
# it and records it finished); a canceled one ends at its next batch. In any other state (requeued, scheduled,
# deferred, started or finished by another worker) it was taken while its worker was away. One rule for
# `cancel_reason` ("taken") and for `save_meta_if_its_workers`.
KEPT_WHILE_AWAY = (JobStatus.FAILED.value, JobStatus.STOPPED.value, JobStatus.CANCELED.value)

_SAVE_META_IF_ITS_WORKERS = load_script("save_meta_if_its_workers")


def _its_workers(state: str, worker: str, worker_name: str) -> bool:
    return worker == worker_name if state == JobStatus.STARTED.value else state in KEPT_WHILE_AWAY


def save_meta_if_its_workers(r: redis.Redis, job: Job) -> bool:
    """Write the meta of a job its worker (``job.worker_name``) runs, atomically, only while the job is
    still that worker's (and not deleted): a worker back from sleep must not overwrite the record of
    the worker that took the job meanwhile. Returns whether it wrote."""
    meta = job.serializer.dumps(job.meta)
    assert job.worker_name is not None, "only for a job run by a worker"  # as its caller (task.progress) checks
    return bool(r.eval(_SAVE_META_IF_ITS_WORKERS, 1, job.key, job.worker_name, meta, *KEPT_WHILE_AWAY))


def cancel_reason(r: redis.Redis, job_id: str, worker_name: str | None = None) -> str | None:
    """Should this running job stop for good? "deleted" (its record is gone: rq-dashboard's
    Delete), "canceled" (``narrate cancel``, rq's ``job.cancel()``/``cancel_job`` or its stop-job
    command), "taken" (asked by its worker, `worker_name`: the job was judged abandoned while that
    worker was asleep or cut off, and requeued, or started or finished by another worker since), or
    None. One round trip; a Redis error counts as no (the next batch asks again)."""
    try:
        replies = cast("list[bytes | None]", r.hmget(Job.key_for(job_id), ["status", CANCEL_FIELD, "worker_name"]))
        status, asked, worker = replies  # narrate's clients return bytes (decode_responses off)
    except redis.RedisError as e:
        log.warning("could not check whether job %s was canceled: %s", job_id, e)
        return None
    if status is None:
        return "deleted"
    if asked is not None or status.decode() == JobStatus.CANCELED.value:
        return "canceled"
    if worker_name and not _its_workers(status.decode(), (worker or b"").decode(), worker_name):
        return "taken"
    return None


def mark_canceled(r: redis.Redis, job: Job, pipeline: Pipeline) -> None:
    """Record the job as canceled: out of its queue and every registry, into the canceled registry,
    kept as long as a failed job (its checkpoints stay: ``narrate resume`` continues it)."""
    q = queue(r, job.origin)
    leave_registries(r, job, pipeline)
    pipeline.lrem(q.key, 0, job.id)
    pipeline.zrem(ScheduledJobRegistry(queue=q).key, job.id)
    keep_s = int(job.failure_ttl or default("keep_days") * DAY_S)
    canceled = CanceledJobRegistry(queue=q)
    job.set_status(JobStatus.CANCELED, pipeline=pipeline)
    pipeline.hset(job.key, "ended_at", utcformat(now()))
    pipeline.zremrangebyscore(canceled.key, 0, current_timestamp())  # entries whose jobs expired (rq keeps them)
    canceled.add(job, ttl=keep_s, pipeline=pipeline)  # scored by when the job expires
    pipeline.expire(job.key, keep_s)


def fail_for_good(r: redis.Redis, job: Job, error: str) -> None:
    """Move a started (or deferred) job to the failed registry with `error` (no retries left)."""
    q = queue(r, job.origin)
    started = StartedJobRegistry(queue=q)
    members = started_executions(started, job.id)
    job.retries_left = 0
    job.meta["error"] = error
    job.save_meta()
    with r.pipeline() as p:
        job.set_status(JobStatus.FAILED, pipeline=p)
        if members:
            p.zrem(started.key, *members)
        p.zrem(DeferredJobRegistry(queue=q).key, job.id)
        FailedJobRegistry(queue=q).add(job, ttl=job.failure_ttl, exc_string=error, pipeline=p)
        p.execute()


def kept_canceled(r: redis.Redis, job: Job) -> bool:
    """A job canceled while it ran, whose worker then died, stays canceled: recorded so (True), or
    False when no cancel was asked for it."""
    if not cancel_reason(r, job.id):
        return False
    with r.pipeline() as p:
        mark_canceled(r, job, p)
        p.execute()
    return True


def abandoned(r: redis.Redis, job: Job) -> tuple[bool, str]:
    """Is this started job's worker gone? (True, "") or (False, why it is left alone). A worker beats
    every ``meta.heartbeat_s`` seconds (its own setting, recorded in the job) while it runs a job."""
    beat_s, grace_s = (
        int(job.meta.get("heartbeat_s", default("heartbeat_s"))),
        int(job.meta.get("grace_s", default("abandoned_grace_s"))),
    )
    limit = ABANDONED_AFTER_BEATS * beat_s + grace_s
    worker = (
        Worker.find_by_key(Worker.redis_worker_namespace_prefix + job.worker_name, connection=r)
        if (job.worker_name)
        else None
    )
    if worker is None or worker.last_heartbeat is None:
        return True, ""
    last = worker.last_heartbeat
    if last.tzinfo is None:
        last = last.replace(tzinfo=UTC)
    age = (datetime.now(UTC) - last).total_seconds()
    if age >= limit:
        return True, ""
    return False, (
        f"its worker {job.worker_name} beat {age:.0f} s ago; it counts as gone after {limit} s "
        f"without a heartbeat ({ABANDONED_AFTER_BEATS} x {beat_s} s + {grace_s} s)"
    )


def recover_abandoned(
    r: redis.Redis, q: Queue, host_id: str, max_attempts: int, crashed_from_inside: bool
) -> tuple[list[str], list[str]]:
    """Requeue the started jobs of this host at the front of the queue. Call it while holding the
    host lock: then no worker of this host is alive, so these jobs are abandoned.
    Returns (requeued, failed) job ids.

    Poison pills: a job whose batch crashes the worker (abort, segfault, a hang the supervisor
    killed, an error exit) `max_attempts` times in a row on the same batch fails for good, naming
    the sentences; a crash after progress starts the count again. A SIGKILL from outside (an
    operator, a reboot, the OOM killer) counts for EXTERNAL_KILL_WEIGHT of a crash."""
    registry = StartedJobRegistry(queue=q)
    recovered, failed = [], []
    for job_id in started_job_ids(registry):
        job = find(r, job_id)
        if job is None:
            continue  # gone: rq's own cleanup drops the entry
        meta: JobMeta = job.meta  # type: ignore[assignment]
        if meta.get("host") != host_id or job.get_status(refresh=False) != JobStatus.STARTED:
            continue
        if kept_canceled(r, job):
            continue
        in_flight = meta.get("in_flight")
        same = in_flight is not None and meta.get("crash_in_flight") == in_flight
        weight = 1.0 if crashed_from_inside else EXTERNAL_KILL_WEIGHT
        crashes = round(float(meta.get("crashes", 0)) * same + weight, 2)
        meta.update({"crashes": crashes, "crash_in_flight": in_flight})
        if crashes >= max_attempts:
            fail_for_good(r, job, f"crashed the worker {crashes:g} times on sentences {in_flight_text(r, job)}")
            failed.append(job_id)
            continue
        if take_back(r, job, "crash"):  # unless another host took it over meanwhile (a part)
            recovered.append(job_id)
    if failed:
        log.error("failed jobs that keep crashing the worker: %s", ", ".join(failed))
    if recovered:
        log.warning("requeued abandoned jobs of this host: %s", ", ".join(recovered))
    return recovered, failed


def in_flight_text(r: redis.Redis, job: Job) -> str:
    """The sentences of the batch in flight, with the start of their text."""
    indices = job.meta.get("in_flight") or []
    if not indices:
        return "unknown"
    try:
        sentences = store.get_document(r, job.args[0]["document"]).sentences
        return "; ".join(f"{i} ({sentences[i][:80]!r})" for i in indices)
    except (LookupError, IndexError, KeyError, TypeError, redis.RedisError):
        return ", ".join(map(str, indices))
