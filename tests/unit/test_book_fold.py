"""One reading of a fanned-out book from its parts (jobs.queue.books.fold_book), which `narrate status`, `narrate
list`, the API and the pages all show: status and error, sentences done, an ETA while it waits, the hosts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from narrate.jobs.queue.books import PartState, fold_book

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def part(n: int, status: str, done: int, *, host: str | None = None, error: str | None = None, ago: float = 0):
    started = NOW - timedelta(seconds=ago) if ago else None
    return PartState(f"b-part{n:03d}", n, status, done, 10, host, error, started)


def test_a_waiting_book_is_its_parts():
    parts = [part(0, "finished", 10, ago=60), part(1, "started", 5, host="mac-2", ago=30), part(2, "queued", 0)]
    view = fold_book("deferred", 30, parts, now=NOW)
    assert (view.status, view.error, view.done, view.hosts) == ("started", None, 15, ["mac-2"])
    assert view.eta_seconds == 60.0  # 15 sentences in the 60 s since the first part started: 15 more take 60 s


def test_a_failed_part_fails_the_book_and_names_itself():
    view = fold_book("deferred", 20, [part(0, "finished", 10), part(1, "failed", 3, error="disk full")], now=NOW)
    assert view.status == "failed" and view.error == "part 1 failed: disk full"
    assert view.eta_seconds is None  # no part has a start time here


def test_a_book_that_stitches_or_ended_keeps_its_own_figures():
    view = fold_book("started", 20, [part(0, "finished", 10, host="mac-1"), part(1, "finished", 10)], now=NOW)
    assert (view.status, view.done, view.eta_seconds, view.hosts) == ("started", None, None, [])


def test_a_part_is_read_from_its_record_and_an_expired_one_is_none():
    meta = {"part": 2, "progress": {"done": 4, "total": 9}, "host": "h1", "error": None}
    values = [b"started", json.dumps(meta).encode(), b"2026-12-07T11:59:00.000000Z"]
    p = PartState.read("b-part002", values)
    assert p == PartState("b-part002", 2, "started", 4, 9, "h1", None, NOW - timedelta(minutes=1))
    assert PartState.read("b-part003", [None, None, None]) is None
