"""`narrate status`: a JSON-able view of one job (its ``JobRecord``, jobs/api/record.py); a fanned-out
book is shown as one job, its parts folded in: sentences done over all parts, the hosts working on it,
an ETA, and the error of a part that failed."""

from __future__ import annotations

from typing import Any

import redis
from narrate.jobs.api.record import JobRecord, due_times, failure_line, isoformat, read_record, with_results
from narrate.jobs.outputs import ownership
from narrate.jobs.queue.states import State

_SHOWN_PARTS = ("id", "part", "status", "done", "total", "host", "error")


def status(r: redis.Redis, job_id: str) -> dict[str, Any]:
    """A JSON-able view of a job: id, status, progress, output (finished), error (failed)."""
    rec = read_record(r, job_id)
    rec = due_times(r, with_results(r, [rec]))[0]
    replaced = None
    if rec.result is not None:
        replaced = ownership.replaced_by(r, rec.result.get("output_relative", ""), job_id)
    error = failure_line(r, rec) if rec.status == State.FAILED else None
    return status_json(rec, error=error, replaced_by=replaced)


def status_json(rec: JobRecord, error: str | None = None, replaced_by: str | None = None) -> dict[str, Any]:
    """`status` of a record (with its result and due time, where read): `error` and `replaced_by` as
    read besides (a failed job's error line, the later job that wrote the same output path)."""
    out: dict[str, Any] = {
        "id": rec.id,
        "status": rec.status,
        "progress": dict(rec.progress),
        "description": rec.description,
        "priority": rec.priority,
        "document": rec.document,
        "voice": rec.meta.get("voice"),
        "enqueued_at": isoformat(rec.enqueued_at),
        "started_at": isoformat(rec.started_at),
        "ended_at": isoformat(rec.ended_at),
        **{k: rec.meta[k] for k in ("redo_of", "superseded_by", "redo") if rec.meta.get(k)},  # jobs/api/redo_request.py
    }
    if rec.status == State.FINISHED:
        result = dict(rec.result or {})
        out.update(output=result.get("output"), duration_seconds=result.get("duration_seconds"), result=result)
        if replaced_by:
            out["output_replaced_by"] = replaced_by  # a later job wrote the same output path
    else:
        if rec.status == State.SCHEDULED:
            out["scheduled_for"] = isoformat(rec.due_at)
        if rec.host:
            out["host"] = rec.host
        if rec.stopping:
            out["cancel_requested"] = True  # it stops within a second
        if rec.meta.get("proof"):
            out["proof"] = rec.meta["proof"]  # --proof: the recognizer and its counts so far (finished: the result's)
    if rec.status == State.FAILED:
        out["error"] = error or rec.error or "failed"
    if rec.meta.get("parts"):
        out["parts"] = [{k: getattr(part, k) for k in _SHOWN_PARTS} for part in rec.parts]
        out["hosts"] = list(rec.hosts)
    return out
