"""Books and their parts: a fanned-out book is its own job (deferred on its parts, rq dependencies)
plus part jobs (narrate.jobs.fanout cuts and enqueues them). What a part or a book is, a book's
status from its parts', a failed part failing its book, and resuming a book."""

from __future__ import annotations

from dataclasses import dataclass

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
