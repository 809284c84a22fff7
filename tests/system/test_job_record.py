"""One job record for every view: `narrate status`, `narrate list`, the API's narration object (and so the
pages) and the dashboard's progress rows all render jobs/api/record.py's ``JobRecord``, so they agree on a
job's state, progress, error, host, due time and stop request; a fanned-out book's parts are folded once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from narrate.jobs.api.listing import list_jobs
from narrate.jobs.api.record import read_records
from narrate.jobs.api.status import status
from narrate.jobs.api.submit import JOB_FUNCTION
from narrate.jobs.dashboard.overview import figures_of, queue_view
from narrate.jobs.queue.lifecycle import CANCEL_FIELD
from narrate.jobs.queue.states import State
from narrate.jobs.server.records import queue
from narrate.jobs.settings import Settings
from narrate.jobs.web import views
from rq.job import Job, JobStatus
from rq.registry import (
    DeferredJobRegistry,
    FailedJobRegistry,
    FinishedJobRegistry,
    ScheduledJobRegistry,
    StartedJobRegistry,
)
from rq.results import Result
from rq.serializers import JSONSerializer

NOW = datetime.now(UTC)
DUE = NOW + timedelta(hours=2)


def _job(r, job_id: str, state: JobStatus, meta: dict, **times) -> Job:
    job = Job.create(
        JOB_FUNCTION,
        args=({"document": "0" * 64},),
        id=job_id,
        connection=r,
        serializer=JSONSerializer,
        description=f"narrate {job_id}.txt",
        meta=meta,
        origin="narrate",
    )
    job.set_status(state)
    for name, when in times.items():
        setattr(job, name, when)
    job.save()
    return job


def _jobs(r) -> None:
    q = queue(r, "narrate")
    progress = {"done": 2, "total": 4, "audio_seconds": 3.0}
    _job(r, "narrate-run", JobStatus.STARTED, {"progress": progress, "host": "h1", "hostname": "mac"}, started_at=NOW)
    r.hset(Job.key_for("narrate-run"), CANCEL_FIELD, "someone")
    r.zadd(StartedJobRegistry(q.name, connection=r).key, {"narrate-run:an-execution": NOW.timestamp() + 3600})
    _job(r, "narrate-bad", JobStatus.FAILED, {"progress": progress, "error": "the disk is full"}, ended_at=NOW)
    r.zadd(FailedJobRegistry(q.name, connection=r).key, {"narrate-bad": NOW.timestamp() + 3600})
    done = _job(r, "narrate-done", JobStatus.FINISHED, {"progress": {**progress, "done": 4}}, ended_at=NOW)
    Result.create(done, Result.Type.SUCCESSFUL, ttl=3600, return_value={"output": "/out/b.m4b", "duration_seconds": 9})
    r.zadd(FinishedJobRegistry(q.name, connection=r).key, {"narrate-done": NOW.timestamp() + 3600})
    _job(r, "narrate-later", JobStatus.SCHEDULED, {"progress": {**progress, "done": 0}})
    r.zadd(ScheduledJobRegistry(q.name, connection=r).key, {"narrate-later": DUE.timestamp()})
    # a fanned-out book: its own job waits (deferred) for its parts; one part runs, one failed
    _job(r, "narrate-book", JobStatus.DEFERRED, {"progress": {"done": 0, "total": 6}, "parts": ["p0", "p1"]})
    r.zadd(DeferredJobRegistry(q.name, connection=r).key, {"narrate-book": NOW.timestamp() + 3600})
    part = {"book": "narrate-book"}
    _job(r, "p0", JobStatus.STARTED, {**part, "progress": {"done": 2, "total": 3}, "part": 0, "host": "h2"})
    _job(r, "p1", JobStatus.FAILED, {**part, "progress": {"done": 1, "total": 3}, "part": 1, "error": "x"})


@pytest.fixture
def jobs(external_redis):
    _jobs(external_redis)
    return external_redis


def test_every_view_renders_the_same_record(jobs, home):
    r = jobs
    settings = Settings(home=home, output_dir=home / "out", queue="narrate")
    rows = {row["id"]: row for row in list_jobs(r, "narrate", Path(settings.output_dir))}
    assert set(rows) == {"narrate-run", "narrate-bad", "narrate-done", "narrate-later", "narrate-book"}  # no parts
    board = queue_view(r, queue(r, "narrate"))
    on_board = {rec.id: (state, rec) for state, recs in board.rows.items() for rec in recs}
    for job_id, row in rows.items():
        st, shown = status(r, job_id), views.narration(r, settings, job_id)
        assert st["status"] == row["status"] and shown["status"] == State.of(row["status"]).api, job_id
        done, total = st["progress"]["done"], st["progress"]["total"]
        assert (row["done"], row["total"]) == (done, total), job_id
        assert (shown["progress"]["sentences_done"], shown["progress"]["sentences_total"]) == (done, total), job_id
        assert st.get("error") == row["error"] == shown["error"], job_id
        assert bool(st.get("cancel_requested")) == row["stopping"] == shown["stopping"], job_id
        assert st.get("scheduled_for") == row["scheduled_for"] == shown["scheduled_for"], job_id
        if job_id in on_board:
            state, rec = on_board[job_id]
            assert state == row["status"] and rec.error == row["error"], job_id
            assert (figures_of(rec, state, NOW).done, figures_of(rec, state, NOW).total) == (done, total), job_id
    assert rows["narrate-run"]["host"] == status(r, "narrate-run")["host"] == "mac" and rows["narrate-run"]["stopping"]
    assert on_board["narrate-run"][1].worker is None  # (no rq worker took it in this test)
    assert rows["narrate-bad"]["error"] == "the disk is full"
    assert rows["narrate-later"]["scheduled_for"] == DUE.isoformat()
    assert on_board["narrate-later"][1].due_at == datetime.fromtimestamp(DUE.timestamp(), UTC)
    assert status(r, "narrate-done")["output"] == "/out/b.m4b" == on_board["narrate-done"][1].result["output"]
    # the book: its parts folded once, the same everywhere
    book = status(r, "narrate-book")
    assert rows["narrate-book"]["status"] == book["status"] == "failed"
    assert rows["narrate-book"]["error"] == book["error"] == "part 1 failed: x"
    assert (book["progress"]["done"], book["progress"]["total"]) == (3, 6)
    assert book["hosts"] == ["h2"] and [p["id"] for p in book["parts"]] == ["p0", "p1"]


def test_records_are_frozen_and_read_in_two_round_trips(jobs):
    r = jobs
    calls = []
    real = r.pipeline

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    r.pipeline = counting
    found = read_records(r, ["narrate-run", "narrate-bad", "narrate-book", "nosuch"])
    r.pipeline = real
    assert len(calls) == 2 and set(found) == {"narrate-run", "narrate-bad", "narrate-book"}
    with pytest.raises(AttributeError):
        found["narrate-run"].status = "finished"  # type: ignore[misc]
    with pytest.raises(TypeError):
        found["narrate-run"].meta["progress"] = {}  # type: ignore[index]
