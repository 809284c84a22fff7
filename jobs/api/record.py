"""One record of a job for every view: `narrate status`, `narrate list`, `narrate watch`, the API's
narration object, the pages and the dashboard's rows all render a ``JobRecord``.

``read_records`` reads any number of jobs in two round trips: one HMGET of ``FIELDS`` per job in one
pipeline, then one for the parts of every fanned-out book among them, folded once (jobs/queue/books.py
``fold_book``: a book waiting for its parts shows their status, sentences done, hosts and ETA). What a
view needs beyond the record (a finished job's result, a failed job's traceback, a scheduled job's due
time) is read by ``with_results``, ``failure_line`` and ``due_times``, each one round trip for many jobs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import redis
from narrate.jobs.errors import JobNotFound
from narrate.jobs.queue.books import PART_FIELDS, PartState, fold_book
from narrate.jobs.queue.lifecycle import CANCEL_FIELD
from narrate.jobs.queue.queues import priority_of
from narrate.jobs.queue.states import State
from narrate.jobs.server.store import text
from redis.client import Pipeline
from rq.job import Job
from rq.registry import ScheduledJobRegistry
from rq.results import Result
from rq.serializers import JSONSerializer
from rq.utils import str_to_date

FIELDS = (
    "status",
    "created_at",
    "enqueued_at",
    "started_at",
    "ended_at",
    "origin",
    "description",
    "meta",
    "worker_name",
    CANCEL_FIELD,
)
NO_PROGRESS: Mapping[str, Any] = MappingProxyType({"done": 0, "total": 0, "audio_seconds": 0.0})
_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class JobRecord:
    """A job as its record holds it, a fanned-out book's parts folded in."""

    id: str
    status: str  # rq's word as stored (deferred and stopped too); a book waiting for its parts: theirs folded
    meta: Mapping[str, Any]
    description: str
    origin: str
    created_at: str | None  # as rq wrote it
    enqueued_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    worker: str | None  # the rq worker running it (rq's name)
    stopping: bool  # a cancel was asked of it while it runs: it stops within a second
    progress: Mapping[str, Any]  # the worker's figures; a waiting book's done and ETA are its parts'
    error: str | None = None  # a failed (or stopped) job's error as narrate recorded it; a book's: its failed part's
    parts: tuple[PartState, ...] = ()
    hosts: tuple[str, ...] = ()  # the hosts working on it (a book: on its parts)
    due_at: datetime | None = None  # a scheduled job's due time, where it was read (``due_times``)
    result: Mapping[str, Any] | None = None  # a finished job's result, where it was read (``with_results``)

    @property
    def state(self) -> State:
        return State.of(self.status)

    @property
    def running(self) -> bool:
        return self.status == State.STARTED

    @property
    def priority(self) -> str:
        return priority_of(self.origin)

    @property
    def document(self) -> str | None:
        return self.meta.get("document")

    @property
    def host(self) -> str | None:
        """The host running it (its name), while it runs."""
        return (self.meta.get("hostname") or self.meta.get("host")) if self.running else None

    @property
    def done(self) -> int:
        return int(self.progress.get("done") or 0)

    @property
    def total(self) -> int:
        return int(self.progress.get("total") or 0)

    @property
    def percent(self) -> float:
        return round(100 * self.done / self.total, 1) if self.total else 0.0

    @property
    def book_of(self) -> str | None:
        """The book this job is a part of (None: not a part)."""
        return self.meta.get("book")

    @classmethod
    def parse(cls, job_id: str, values: list[Any]) -> JobRecord | None:
        """A record from its FIELDS as HMGET returned them (None: expired, deleted, or not a job narrate reads)."""
        raw = dict(zip(FIELDS, values, strict=True))
        if raw["status"] is None:
            return None
        try:
            meta = JSONSerializer.loads(raw["meta"]) if raw["meta"] else {}
            enqueued, started, ended = (str_to_date(raw[k]) if raw[k] else None for k in FIELDS[2:5])
        except ValueError:
            return None
        meta = meta if isinstance(meta, dict) else {}
        status = text(raw["status"])
        progress = meta.get("progress", NO_PROGRESS)
        return cls(
            id=job_id,
            status=status,
            meta=MappingProxyType(meta),
            description=text(raw["description"]) if raw["description"] else "",
            origin=text(raw["origin"]) if raw["origin"] else "",
            created_at=text(raw["created_at"]) if raw["created_at"] else None,
            worker=text(raw["worker_name"]) if raw["worker_name"] else None,
            stopping=status == State.STARTED and bool(raw[CANCEL_FIELD]),
            progress=MappingProxyType(progress if isinstance(progress, dict) else {}),
            error=meta.get("error") if status in ("failed", "stopped") else None,
            enqueued_at=enqueued,
            started_at=started,
            ended_at=ended,
        )

    def folded(self, parts: list[PartState]) -> JobRecord:
        """This book with its parts folded in (jobs/queue/books.py fold_book)."""
        view = fold_book(self.status, self.total, parts)
        hosts = {*view.hosts, *([self.meta["host"]] if self.running and self.meta.get("host") else [])}
        folded = replace(self, parts=tuple(parts), hosts=tuple(sorted(hosts)))
        if view.done is None:
            return folded  # the book's own job runs (it stitches) or ended: its own figures
        progress = {**self.progress, "done": view.done, "total": self.total, "eta_seconds": view.eta_seconds}
        return replace(folded, status=view.status, error=view.error or self.error, progress=MappingProxyType(progress))


def read_records(r: redis.Redis, job_ids: Iterable[str]) -> dict[str, JobRecord]:
    """The records of `job_ids` that exist, in their order, books folded: two round trips however many."""
    ids = list(dict.fromkeys(job_ids))
    with r.pipeline(transaction=False) as p:
        for job_id in ids:
            p.hmget(Job.key_for(job_id), FIELDS)
        found = p.execute()
    records = {i: rec for i, v in zip(ids, found, strict=True) if (rec := JobRecord.parse(i, v)) is not None}
    books = [rec for rec in records.values() if rec.meta.get("parts")]
    if books:
        with r.pipeline(transaction=False) as p:
            for book in books:
                for part in book.meta["parts"]:
                    p.hmget(Job.key_for(part), PART_FIELDS)
            values = iter(p.execute())
        for book in books:
            parts = [s for s in (PartState.read(i, next(values)) for i in book.meta["parts"]) if s]
            records[book.id] = book.folded(parts)
    return records


def read_record(r: redis.Redis, job_id: str) -> JobRecord:
    """One job's record (JobNotFound: none, or it expired)."""
    found = read_records(r, [job_id]).get(job_id)
    if found is None:
        raise JobNotFound(f"no job {job_id!r} (wrong id, or it expired)")
    return found


def _ask(
    r: redis.Redis, records: list[JobRecord], state: State, ask: Callable[[Pipeline, JobRecord], object]
) -> dict[str, Any]:
    """One pipelined command (`ask`) for each record in `state`, in one round trip: the replies by job id."""
    picked = [rec for rec in records if rec.status == state]
    with r.pipeline(transaction=False) as p:
        for rec in picked:
            ask(p, rec)
        return dict(zip([rec.id for rec in picked], p.execute(), strict=True))


def with_results(r: redis.Redis, records: Iterable[JobRecord]) -> list[JobRecord]:
    """The records with their results read (each finished one's latest): one round trip for all."""
    records = list(records)
    latest = _ask(r, records, State.FINISHED, lambda p, rec: p.xrevrange(Result.get_key(rec.id), "+", "-", count=1))
    out = []
    for rec in records:
        entries = latest.get(rec.id)
        if entries:
            result_id, payload = entries[0]
            res = Result.restore(rec.id, text(result_id), payload, connection=r, serializer=JSONSerializer)
            value = res.return_value if isinstance(res.return_value, dict) else {}
            rec = replace(rec, result=MappingProxyType(value))
        out.append(rec)
    return out


def due_times(r: redis.Redis, records: Iterable[JobRecord]) -> list[JobRecord]:
    """The records with the due time of each scheduled one: one round trip for all."""
    records = list(records)
    scores = _ask(r, records, State.SCHEDULED, lambda p, rec: p.zscore(_scheduled_key(r, rec.origin), rec.id))
    return [
        replace(rec, due_at=datetime.fromtimestamp(scores[rec.id], tz=UTC)) if scores.get(rec.id) is not None else rec
        for rec in records
    ]


def _scheduled_key(r: redis.Redis, origin: str) -> str:
    return ScheduledJobRegistry(origin, connection=r).key


def due_time(r: redis.Redis, job: Job) -> datetime | None:
    """When a scheduled job is due (None if it is not in its queue's scheduled registry)."""
    score = r.zscore(_scheduled_key(r, job.origin), job.id)
    return datetime.fromtimestamp(score, UTC) if score is not None else None


def failure_line(r: redis.Redis, rec: JobRecord) -> str:
    """A failed job's error: as narrate recorded it, else the last line of rq's traceback."""
    if rec.error:
        return rec.error
    res = Result.fetch_latest(Job(rec.id, connection=r, serializer=JSONSerializer), serializer=JSONSerializer)
    found = (res.exc_string if res is not None else None) or "failed"
    lines = [line for line in found.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "failed"


def isoformat(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None
