"""Books and their parts: a fanned-out book is its own job (deferred on its parts, rq dependencies)
plus part jobs (narrate.jobs.fanout cuts and enqueues them). What a part or a book is, a book's
status from its parts', a failed part failing its book, and resuming a book."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import redis
from narrate.jobs.errors import BadInput
from narrate.jobs.queue.lifecycle import (
    CANCEL_FIELD,
    abandoned,
    fail_for_good,
    fresh_start,
    leave_registries,
    requeue_front,
    take_back,
)
from narrate.jobs.queue.rq_compat import defer_on
from narrate.jobs.server.records import fetch
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from rq.utils import utcparse


def part_of(job: Job) -> str | None:
    """The book a part job belongs to (None: not a part)."""
    return (job.meta or {}).get("book")


def is_book(job: Job) -> bool:
    return bool((job.meta or {}).get("parts"))


def fail_book(r: redis.Redis, book_id: str, error: str) -> None:
    """A part failed for good: the book (waiting for it) fails with the part's error."""
    book = fetch(r, book_id)
    if book.get_status(refresh=False) == JobStatus.DEFERRED:
        fail_for_good(r, book, error)


def book_state(own: str, parts: list[tuple[str, str | None, int | None]]) -> tuple[str, str | None]:
    """A book's status (and error) from its own and its parts' (status, error, number): while it waits
    for its parts (deferred) it is failed if a part failed, canceled if a part was, started once a
    part started, else queued; otherwise its own job's status."""
    if own != "deferred":
        return own, None
    for state, error, number in parts:
        if state in ("failed", "stopped"):
            return "failed", f"part {number} failed: {error or 'see its worker log'}"
    if any(state == "canceled" for state, _, _ in parts):
        return "canceled", None
    if any(state in ("started", "finished") for state, _, _ in parts):
        return "started", None
    return "queued", None


PART_FIELDS = ("status", "meta", "started_at")  # what a book's view reads of each part's record (one HMGET)


@dataclass(frozen=True)
class PartState:
    """One part of a fanned-out book as its record holds it."""

    id: str
    part: int | None  # its number (0, 1, ...); None only if its record lost it
    status: str
    done: int
    total: int
    host: str | None
    error: str | None
    started_at: datetime | None

    @classmethod
    def read(cls, job_id: str, values: list) -> PartState | None:
        """A part from its record's PART_FIELDS (None: the record expired or was deleted)."""
        state, raw_meta, started = values
        if state is None:
            return None
        meta = JSONSerializer.loads(raw_meta) if raw_meta else {}
        progress = meta.get("progress") or {}
        return cls(
            id=job_id,
            part=meta.get("part"),
            status=state.decode(),
            done=int(progress.get("done", 0)),
            total=int(progress.get("total", 0)),
            host=meta.get("host"),
            error=meta.get("error"),
            started_at=utcparse(started.decode()) if started else None,
        )


@dataclass(frozen=True)
class BookView:
    """A fanned-out book's figures from its parts: status and error (``book_state``), sentences done, an ETA while
    it waits for its parts, and the hosts working on them."""

    status: str
    error: str | None
    done: int | None  # None: the book's own job runs (it stitches) or ended: its own figures stand
    eta_seconds: float | None
    hosts: list[str]


def fold_book(own: str, total: int, parts: list[PartState], now: datetime | None = None) -> BookView:
    """The one reading of a book from its parts, for `narrate status`, `narrate list`, the API and the pages."""
    hosts = sorted({p.host for p in parts if p.status == "started" and p.host})
    if own != "deferred":
        return BookView(own, None, None, None, hosts)
    state, error = book_state(own, [(p.status, p.error, p.part) for p in parts])
    done = sum(p.done for p in parts)
    starts = [p.started_at for p in parts if p.started_at is not None]
    eta = None
    if starts and done:
        elapsed = ((now or datetime.now(UTC)) - min(starts)).total_seconds()
        eta = round((total - done) * elapsed / done, 1) if elapsed > 0 else None
    return BookView(state, error, done, eta, hosts)


@dataclass(frozen=True)
class PartsResumed:
    """What `resume_book` did: of the book's `parts`, `requeued` run again; it waits for `waiting`
    (none: the book itself is requeued, to stitch)."""

    parts: int
    requeued: int
    waiting: int


def resume_book(r: redis.Redis, book: Job) -> PartsResumed:
    """`resume` of a book: its failed, canceled or abandoned parts are requeued (the finished ones
    stay), and the book waits for its unfinished parts again (or is requeued at once when none is)."""
    ids = book.meta["parts"]
    fetched = Job.fetch_many(ids, connection=r, serializer=book.serializer)
    if any(p is None for p in fetched):
        raise BadInput(f"parts of book {book.id} expired; submit the book again")
    parts = [p for p in fetched if p is not None]  # all of them
    again = []
    for p in parts:
        state = p.get_status(refresh=False)
        if state in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
            requeue_front(r, p, "resume")
            again.append(p.id)
        elif state == JobStatus.STARTED and abandoned(r, p)[0] and take_back(r, p, "resume"):
            again.append(p.id)
    waiting = [p.id for p in parts if p.get_status(refresh=True) != JobStatus.FINISHED]
    if not waiting:
        requeue_front(r, book, "resume")
        return PartsResumed(len(ids), len(again), 0)
    fresh_start(book)
    book.save_meta()
    with r.pipeline() as pipe:
        leave_registries(r, book, pipe)
        pipe.hdel(book.key, CANCEL_FIELD)
        defer_on(book, ids, pipe)
        pipe.execute()
    return PartsResumed(len(ids), len(again), len(waiting))
