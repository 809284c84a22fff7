"""`narrate status`: a JSON-able view of one job; a fanned-out book (jobs.fanout.split) is shown as one job,
its parts folded in: sentences done over all parts, the hosts working on it, an ETA, and the error of
a part that failed."""

from __future__ import annotations

from datetime import UTC, datetime

import redis
from narrate.jobs.outputs import ownership
from narrate.jobs.queue import lifecycle
from narrate.jobs.queue.books import PART_FIELDS, PartState, fold_book
from narrate.jobs.queue.queues import priority_of
from narrate.jobs.server.records import fetch
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry


def due_time(r: redis.Redis, job: Job) -> datetime | None:
    """When a scheduled job is due (None if it is not in its queue's scheduled registry)."""
    score = r.zscore(ScheduledJobRegistry(job.origin, connection=r).key, job.id)
    return datetime.fromtimestamp(score, UTC) if score is not None else None


def status(r: redis.Redis, job_id: str) -> dict:
    """A JSON-able view of a job: id, status, progress, output (finished), error (failed)."""
    job = fetch(r, job_id)
    state = job.get_status(refresh=False)
    meta = job.get_meta(refresh=False) or {}
    out = _base(job, state, meta)
    if state == JobStatus.SCHEDULED:
        due = due_time(r, job)
        out["scheduled_for"] = due.isoformat() if due else None
    if state == JobStatus.STARTED and meta.get("host"):
        out["host"] = meta.get("hostname") or meta["host"]  # the host running it (its name)
    if state == JobStatus.STARTED and r.hexists(job.key, lifecycle.CANCEL_FIELD):
        out["cancel_requested"] = True  # it stops within a second
    if meta.get("proof"):
        out["proof"] = meta["proof"]  # --proof: the recognizer and its counts so far (finished: the result's)
    if state is not None and state.value == "finished":
        result = job.return_value(refresh=True) or {}
        out = finished_status(job, result)
        replaced = ownership.replaced_by(r, result.get("output_relative", ""), job.id)
        if replaced:
            out["output_replaced_by"] = replaced  # a later job wrote the same output path
    if state is not None and state.value == "failed":
        out["error"] = meta.get("error") or _last_line(job)
    if meta.get("parts"):
        _fold_parts(r, job, out)
    return out


def finished_status(job: Job, result: dict) -> dict:
    """`status` of a finished job whose record and result are in hand (no round trip; jobs/api/jobview.py
    reads many at once): all but `output_replaced_by` and its parts."""
    out = _base(job, JobStatus.FINISHED, job.meta or {})
    out.update(output=result.get("output"), duration_seconds=result.get("duration_seconds"), result=result)
    return out


def _base(job: Job, state: JobStatus | None, meta: dict) -> dict:
    return {
        "id": job.id,
        "status": state.value if state is not None else "unknown",
        "progress": meta.get("progress", {"done": 0, "total": 0, "audio_seconds": 0.0}),
        "description": job.description,
        "priority": priority_of(job.origin),
        "document": meta.get("document"),
        "voice": meta.get("voice"),
        "enqueued_at": job.enqueued_at.isoformat() if job.enqueued_at else None,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "ended_at": job.ended_at.isoformat() if job.ended_at else None,
        **{k: meta[k] for k in ("redo_of", "superseded_by", "redo") if meta.get(k)},  # `narrate redo`: jobs/api/redo.py
    }


def _fold_parts(r: redis.Redis, book: Job, out: dict) -> None:
    """A book waiting for its parts: its status, progress, hosts and ETA are its parts' (jobs.queue.books.fold_book)."""
    with r.pipeline(transaction=False) as p:
        for part_id in book.meta["parts"]:
            p.hmget(Job.key_for(part_id), PART_FIELDS)
        found = p.execute()
    parts = [s for s in (PartState.read(i, v) for i, v in zip(book.meta["parts"], found, strict=True)) if s]
    shown = ("id", "part", "status", "done", "total", "host", "error")
    out["parts"] = [{k: getattr(q, k) for k in shown} for q in parts]
    total = int((book.meta.get("progress") or {}).get("total", 0))
    view = fold_book(out["status"], total, parts)
    out["hosts"] = view.hosts
    if out["status"] == "started" and book.meta.get("host"):
        out["hosts"] = sorted({*out["hosts"], book.meta["host"]})
    if view.done is None:
        return  # the book's own job runs (it stitches) or ended: its own figures
    out["status"] = view.status
    if view.error:
        out["error"] = view.error
    out["progress"] = {**out["progress"], "done": view.done, "total": total, "eta_seconds": view.eta_seconds}


def _last_line(job: Job) -> str:
    res = job.latest_result()
    text = (res.exc_string if res is not None else None) or job.exc_info or "failed"
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "failed"
