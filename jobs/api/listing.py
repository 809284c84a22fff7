"""``narrate list``: every job of a queue's three priorities (and of `narrate run`'s private queues),
newest first, in three round trips whatever the number of jobs (one names the private queues, one
pipeline reads the queues and registries, one reads the fields of every job it found); or a page of
them (``list_page``: one more round trip picks the page, and only its jobs are read). A registry
entry whose job expired or was deleted is skipped."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import redis
from narrate.jobs.queue.books import PART_FIELDS, PartState, fold_book
from narrate.jobs.queue.lifecycle import CANCEL_FIELD
from narrate.jobs.queue.queues import priority_of, queue_names
from narrate.jobs.queue.runs import run_queues
from narrate.jobs.queue.states import State
from narrate.jobs.server.records import queue
from narrate.jobs.voices.clips import CLIP_PREFIX
from rq.job import Job
from rq.registry import (
    BaseRegistry,
    CanceledJobRegistry,
    DeferredJobRegistry,
    FailedJobRegistry,
    FinishedJobRegistry,
    ScheduledJobRegistry,
    StartedJobRegistry,
)
from rq.serializers import JSONSerializer

STATES = tuple(s.value for s in State)
_ALSO = {"failed": ("failed", "stopped")}  # a stopped job (rq's own stop) is listed with the failed ones
REGISTRIES: dict[str, type[BaseRegistry]] = {
    "deferred": DeferredJobRegistry,
    "scheduled": ScheduledJobRegistry,
    "started": StartedJobRegistry,
    "finished": FinishedJobRegistry,
    "failed": FailedJobRegistry,
    "canceled": CanceledJobRegistry,
}
_FIELDS = ("status", "created_at", "origin", "description", "meta", CANCEL_FIELD)


def list_jobs(r: redis.Redis, base_queue: str, output_root: Path, status: str | None = None) -> list[dict]:
    """One dict per job (JSON-able), newest first; `status` keeps only the jobs in that state."""
    return list_page(r, base_queue, output_root, status)[0]


def list_page(
    r: redis.Redis,
    base_queue: str,
    output_root: Path,
    status: str | tuple[str, ...] | None = None,
    limit: int | None = None,
    after: str | None = None,
    clips: bool = True,
) -> tuple[list[dict], bool]:
    """`list_jobs`, a page at a time: the newest `limit` jobs (all: None) listed after job `after`
        (the last of the previous page); and whether more follow. A page reads the records of its own
        jobs only (one more round trip, for every job's creation time, picks them), so a page of 100
        costs the same with 10,000 jobs as with 100. A part of a fanned-out book is never a row of its
        own (its book's row shows it), so a page may hold fewer than `limit` rows. `status`: one state or
    several. `clips`: also the clip jobs (previews, speech: ids CLIP_PREFIX...)."""
    wanted = (status,) if isinstance(status, str) else status or STATES
    due_at = {}
    ids: dict[str, None] = {}
    sources, results = _gather(r, base_queue, (*wanted, "deferred"))  # deferred: fanned-out books
    for (state, registry), entries in zip(sources, results, strict=True):
        for entry in entries:
            if state == "queued":
                ids[entry.decode()] = None
            elif state == "scheduled":
                job_id = registry.parse_job_id(entry[0])
                ids[job_id] = None
                due_at[job_id] = entry[1]
            else:
                ids[registry.parse_job_id(entry)] = None
    if not clips:
        ids = {i: None for i in ids if not i.startswith(CLIP_PREFIX)}
    more = False
    if limit is not None:
        picked, more = _newest(r, list(ids), limit, after)
        ids = dict.fromkeys(picked)
    with r.pipeline(transaction=False) as p:
        for job_id in ids:
            p.hmget(Job.key_for(job_id), _FIELDS)
        found = p.execute()
    root = output_root.expanduser().resolve()
    keep = {k for state in wanted for k in _ALSO.get(state, (state,))} if status else None
    rows = []
    for job_id, values in zip(ids, found, strict=True):
        fields = dict(zip(_FIELDS, values, strict=True))
        if fields["status"] is None:
            continue  # expired or deleted: a stale registry entry
        row = _row(job_id, fields["status"].decode(), fields, due_at.get(job_id), root)
        if not row.pop("_book"):  # a part is shown in its book's row
            rows.append(row)
    _fold_parts(r, rows)
    rows = [row for row in rows if keep is None or row["status"] in keep]
    rows.sort(key=lambda row: (row["created_at"] or "", row["id"]), reverse=True)
    return rows, more


_PART = re.compile(r"-part\d{3}$")  # a fanned-out book's part (jobs/fanout/split.py Part.job_id)


def _newest(r: redis.Redis, ids: list[str], limit: int, after: str | None) -> tuple[list[str], bool]:
    """The `limit` newest of `ids` (by creation time, then id, as rows are sorted) that come after
    job `after` in that order; and whether more follow."""
    ids = [i for i in ids if not _PART.search(i)]
    with r.pipeline(transaction=False) as p:
        for job_id in ids:
            p.hget(Job.key_for(job_id), "created_at")
        created = p.execute()
    order = sorted(
        ((c.decode() if c else "", i) for i, c in zip(ids, created, strict=True) if c is not None), reverse=True
    )
    if after is not None:
        mark = next((n for n, (_, i) in enumerate(order) if i == after), None)
        order = order[mark + 1 :] if mark is not None else []
    return [i for _, i in order[:limit]], len(order) > limit


def _gather(r: redis.Redis, base_queue: str, wanted: tuple[str, ...]) -> tuple[list, list]:
    """Every queue list and registry of the wanted states, in one pipeline."""
    sources: list[tuple[str, BaseRegistry | None]] = []
    names = queue_names(base_queue) + run_queues(r)  # and `narrate run`'s private queues (jobs/queue/runs.py)
    with r.pipeline(transaction=False) as p:
        for name in names:
            q = queue(r, name)
            for state in wanted:
                if state == "queued":
                    p.lrange(q.key, 0, -1)
                    sources.append((state, None))
                    continue
                registry = REGISTRIES[state](queue=q)
                p.zrange(registry.key, 0, -1, withscores=state == "scheduled")
                sources.append((state, registry))
        return sources, p.execute()


def _row(job_id: str, state: str, fields: dict, due: float | None, root: Path) -> dict:
    meta = JSONSerializer.loads(fields["meta"]) if fields["meta"] else {}
    progress = meta.get("progress") or {}
    done, total = int(progress.get("done", 0)), int(progress.get("total", 0))
    origin = fields["origin"].decode() if fields["origin"] else ""
    description = fields["description"].decode() if fields["description"] else ""
    return {
        "id": job_id,
        "document": meta.get("document") or description,
        "status": state,
        "priority": priority_of(origin),
        "done": done,
        "total": total,
        "percent": round(100 * done / total, 1) if total else 0.0,
        "audio_seconds": progress.get("audio_seconds"),
        "realtime_factor": progress.get("realtime_factor") if state == "started" else None,
        "eta_seconds": progress.get("eta_seconds") if state == "started" else None,
        "output": str(root / meta["output"]) if meta.get("output") else None,
        "created_at": fields["created_at"].decode() if fields["created_at"] else None,
        "scheduled_for": datetime.fromtimestamp(due, UTC).isoformat() if due is not None else None,
        "error": meta.get("error") if state in ("failed", "stopped") else None,
        "stopping": state == "started" and bool(fields.get(CANCEL_FIELD)),
        "host": (meta.get("hostname") or meta.get("host")) if state == "started" else None,  # the host running it
        "redo_of": meta.get("redo_of"),  # `narrate redo`: the job it redoes (jobs/task/superseding.py)
        "superseded_by": meta.get("superseded_by"),  # ... and the one that redid it
        "voice": meta.get("voice"),  # what the job speaks in (a saved voice's name, a sample, a preset)
        "voice_name": meta.get("voice_name"),
        "voice_sample": meta.get("voice_sample"),  # canceled: it stops within a second
        "_book": meta.get("book"),
        "_parts": meta.get("parts"),
    }


def _fold_parts(r: redis.Redis, rows: list[dict]) -> None:
    """A fanned-out book's row: its status, error, sentences done and ETA from its parts (jobs.queue.books.fold_book);
    one more round trip for the parts of every book listed."""
    books = [row for row in rows if row["_parts"]]
    with r.pipeline(transaction=False) as p:
        for row in books:
            for part in row["_parts"]:
                p.hmget(Job.key_for(part), PART_FIELDS)
        found = iter(p.execute())
    for row in books:
        parts = [s for s in (PartState.read(i, next(found)) for i in row["_parts"]) if s]
        view = fold_book(row["status"], row["total"], parts)
        row["status"], row["error"] = view.status, view.error or row["error"]
        if view.done is not None:
            row["done"], row["eta_seconds"] = view.done, view.eta_seconds
            row["percent"] = round(100 * row["done"] / row["total"], 1) if row["total"] else 0.0
    for row in rows:
        del row["_parts"]
