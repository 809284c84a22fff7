"""What the dashboard's progress page shows: narrate's queues and their jobs in a form a person reads
(queued; scheduled with the time they are due; running with percentage, audio seconds, realtime
factor and ETA; recently finished with their output; recently failed with their error).

Read only: no registry cleanup runs here, and a job that cannot be read (deleted meanwhile, or not
narrate's) becomes a row saying so rather than an error. Each list is bounded, so a queue of
10,000 jobs costs a few round trips.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from types import MappingProxyType

import redis
from narrate.jobs.api.record import NO_PROGRESS, JobRecord, failure_line, read_records, with_results
from narrate.jobs.queue.rq_compat import started_job_ids
from narrate.jobs.queue.states import State
from narrate.jobs.server.records import queue
from rq import Queue
from rq.registry import (
    CanceledJobRegistry,
    FailedJobRegistry,
    FinishedJobRegistry,
    ScheduledJobRegistry,
    StartedJobRegistry,
)
from rq.serializers import JSONSerializer

STATES = tuple(
    s.value for s in (State.STARTED, State.SCHEDULED, State.QUEUED, State.FAILED, State.CANCELED, State.FINISHED)
)


@dataclass(frozen=True)
class Figures:
    """A job's progress as a person reads it."""

    done: int
    total: int
    audio_seconds: float
    percent: float | None  # None: nothing to count yet (total 0)
    realtime_factor: float | None  # audio seconds per wall second; None before any audio
    eta_seconds: float | None  # None while there is nothing to estimate from


@dataclass
class QueueView:
    name: str
    counts: dict[str, int]
    rows: dict[str, list[JobRecord]] = field(default_factory=dict)  # a state's jobs (its registry's)

    @property
    def empty(self) -> bool:
        return not any(self.counts.values())


def _aware(dt: datetime | None) -> datetime | None:
    return dt.replace(tzinfo=UTC) if dt is not None and dt.tzinfo is None else dt


def _number(value: object) -> float | None:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def figures(meta: dict, started_at: datetime | None, now: datetime, running: bool) -> Figures:
    """Percentage, realtime factor and ETA from job meta. The worker's own `realtime_factor` and
    `eta_seconds` (in `progress`) win; without them they are estimated from the time since the job
    started: audio seconds per wall second, and the remaining sentences at the rate so far."""
    progress = given if isinstance(given := meta.get("progress"), dict) else {}
    done = int(_number(progress.get("done")) or 0)
    total = int(_number(progress.get("total")) or 0)
    audio = _number(progress.get("audio_seconds")) or 0.0
    percent = min(100.0, 100.0 * done / total) if total > 0 else None
    rtf = _number(progress.get("realtime_factor"))
    eta = _number(progress.get("eta_seconds"))
    if running and (rtf is None or eta is None):
        elapsed = (now - started_at).total_seconds() if started_at is not None else 0.0
        if rtf is None and elapsed > 0 and audio > 0:
            rtf = audio / elapsed
        if eta is None and total > 0 and done >= total:
            eta = 0.0
        elif eta is None and elapsed > 0 and done > 0:
            eta = (total - done) * elapsed / done
    if not running:
        eta = None
    return Figures(done, total, audio, percent, rtf, None if eta is None else max(0.0, eta))


def figures_of(rec: JobRecord, state: str, now: datetime) -> Figures:
    """The figures of a job listed under `state` (its registry)."""
    return figures(dict(rec.meta), _aware(rec.started_at), now, running=state == State.STARTED)


def _unreadable(job_id: str) -> JobRecord:
    """A row for a job that cannot be read (deleted meanwhile, or not narrate's)."""
    gone = "(job not readable: expired, deleted, or not a narrate job)"
    return JobRecord(
        job_id, "unknown", MappingProxyType({}), gone, "", None, None, None, None, None, False, NO_PROGRESS
    )


def _records(r: redis.Redis, ids: dict[str, list[str]], due_at: dict[str, datetime]) -> dict[str, list[JobRecord]]:
    """Each state's jobs as records: the finished with their results, the failed with their error line,
    the scheduled with their due times; one that cannot be read as such."""
    found = read_records(r, (i for state in STATES for i in ids[state]))
    found.update({rec.id: rec for rec in with_results(r, [found[i] for i in ids["finished"] if i in found])})
    for i in ids["failed"]:
        if i in found and not found[i].error:
            found[i] = replace(found[i], error=failure_line(r, found[i]))
    return {
        state: [replace(found[i], due_at=due_at.get(i)) if i in found else _unreadable(i) for i in ids[state]]
        for state in STATES
    }


def queue_view(r: redis.Redis, q: Queue, limit: int = 50, recent: int = 20) -> QueueView:
    """One queue: counts per state, and up to `limit` jobs of each waiting or running state (oldest
    first) and the `recent` newest finished and failed ones."""
    scheduled, started = ScheduledJobRegistry(queue=q), StartedJobRegistry(queue=q)
    finished, failed = FinishedJobRegistry(queue=q), FailedJobRegistry(queue=q)
    canceled = CanceledJobRegistry(queue=q)
    with r.pipeline() as p:
        p.llen(q.key)
        for registry in (scheduled, started, failed, canceled, finished):
            p.zcard(registry.key)
        p.lrange(q.key, 0, limit - 1)
        p.zrange(scheduled.key, 0, limit - 1, withscores=True)
        for registry in (failed, canceled, finished):
            p.zrevrange(registry.key, 0, recent - 1)
        (
            n_queued,
            n_scheduled,
            n_started,
            n_failed,
            n_canceled,
            n_finished,
            queued_ids,
            due,
            failed_ids,
            canceled_ids,
            finished_ids,
        ) = p.execute()
    view = QueueView(
        q.name,
        dict(
            queued=n_queued,
            scheduled=n_scheduled,
            started=n_started,
            failed=n_failed,
            canceled=n_canceled,
            finished=n_finished,
        ),
    )
    if view.empty:
        return view
    ids = {
        "queued": [i.decode() for i in queued_ids],
        "scheduled": [i.decode() for i, _ in due],
        "started": started_job_ids(started)[:limit],
        "failed": [i.decode() for i in failed_ids],
        "canceled": [i.decode() for i in canceled_ids],
        "finished": [i.decode() for i in finished_ids],
    }
    due_at = {i.decode(): datetime.fromtimestamp(score, UTC) for i, score in due}
    view.rows = _records(r, ids, due_at)
    return view


def overview(r: redis.Redis, limit: int = 50, recent: int = 20) -> list[QueueView]:
    """Every queue rq knows on this server (narrate's, its priorities, `narrate run`'s), by name."""
    names = sorted(q.name for q in Queue.all(connection=r, serializer=JSONSerializer))
    return [queue_view(r, queue(r, name), limit, recent) for name in names]
