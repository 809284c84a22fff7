"""What the dashboard's progress page shows: narrate's queues and their jobs in a form a person reads
(queued; scheduled with the time they are due; running with percentage, audio seconds, realtime
factor and ETA; recently finished with their output; recently failed with their error).

Read only: no registry cleanup runs here, and a job that cannot be read (deleted meanwhile, or not
narrate's) becomes a row saying so rather than an error. Each list is bounded, so a queue of
10,000 jobs costs a few round trips.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import redis
from narrate.jobs.queue.rq_compat import started_job_ids
from narrate.jobs.queue.states import State
from narrate.jobs.server.records import queue
from rq import Queue
from rq.job import Job
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


@dataclass(frozen=True)
class Row:
    id: str
    state: str
    description: str
    figures: Figures
    enqueued_at: datetime | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    due_at: datetime | None = None  # scheduled jobs
    worker: str | None = None
    output: str | None = None
    error: str | None = None


@dataclass
class QueueView:
    name: str
    counts: dict[str, int]
    rows: dict[str, list[Row]] = field(default_factory=dict)

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


def _error_line(job: Job) -> str:
    meta_error = job.meta.get("error")
    if isinstance(meta_error, str) and meta_error:
        return meta_error
    result = job.latest_result()
    text = (result.exc_string if result is not None else None) or job.exc_info or "failed"
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return lines[-1] if lines else "failed"


def _output(job: Job) -> str | None:
    try:
        value = job.return_value()
    except Exception:  # noqa: BLE001 - an unreadable result shows as no output
        return None
    return str(value["output"]) if isinstance(value, dict) and value.get("output") else None


def _fetch(r: redis.Redis, ids: list[str]) -> dict[str, Job | None]:
    """The jobs by id (None: gone, or not a job narrate can read), in one round trip."""
    with r.pipeline() as p:
        for job_id in ids:
            p.hgetall(Job.key_for(job_id))
        raws = p.execute()
    jobs: dict[str, Job | None] = {}
    for job_id, raw in zip(ids, raws, strict=True):
        job = None
        if raw:
            try:
                job = Job(job_id, connection=r, serializer=JSONSerializer)
                job.restore(raw)
            except Exception:  # noqa: BLE001 - malformed: shown as unreadable
                job = None
        jobs[job_id] = job
    return jobs


def _row(job_id: str, job: Job | None, state: str, now: datetime, due: datetime | None = None) -> Row:
    if job is None:
        return Row(
            job_id,
            state,
            "(job not readable: expired, deleted, or not a narrate job)",
            Figures(0, 0, 0.0, None, None, None),
            due_at=due,
        )
    started = _aware(job.started_at)
    meta = job.meta if isinstance(job.meta, dict) else {}
    return Row(
        id=job_id,
        state=state,
        description=job.description or "",
        figures=figures(meta, started, now, running=state == "started"),
        enqueued_at=_aware(job.enqueued_at),
        started_at=started,
        ended_at=_aware(job.ended_at),
        due_at=due,
        worker=job.worker_name if state == "started" else None,
        output=_output(job) if state == "finished" else None,
        error=_error_line(job) if state == "failed" else None,
    )


def queue_view(r: redis.Redis, q: Queue, limit: int = 50, recent: int = 20, now: datetime | None = None) -> QueueView:
    """One queue: counts per state, and up to `limit` jobs of each waiting or running state (oldest
    first) and the `recent` newest finished and failed ones."""
    now = now or datetime.now(UTC)
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
    jobs = _fetch(r, list(dict.fromkeys(i for state in STATES for i in ids[state])))
    for state in STATES:
        view.rows[state] = [_row(i, jobs[i], state, now, due_at.get(i)) for i in ids[state]]
    return view


def overview(r: redis.Redis, limit: int = 50, recent: int = 20, now: datetime | None = None) -> list[QueueView]:
    """Every queue rq knows on this server (narrate's, its priorities, `narrate run`'s), by name."""
    names = sorted(q.name for q in Queue.all(connection=r, serializer=JSONSerializer))
    return [queue_view(r, queue(r, name), limit, recent, now) for name in names]
