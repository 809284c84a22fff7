"""``narrate list``: every job of a queue's three priorities (and of `narrate run`'s private queues),
newest first, in three round trips whatever the number of jobs (one names the private queues, one
pipeline reads the queues and registries, one reads the fields of every job it found); or a page of
them (``list_page``: one more round trip picks the page, and only its jobs are read). A registry
entry whose job expired or was deleted is skipped."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
from narrate.jobs.api.record import JobRecord, isoformat, read_records
from narrate.jobs.queue.queues import queue_names
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
    """`list_jobs`, a page at a time (``page_records``), as `narrate list` shows each job (``list_row``)."""
    records, more = page_records(r, base_queue, status, limit, after, clips)
    root = output_root.expanduser().resolve()
    return [list_row(rec, root) for rec in records], more


def page_records(
    r: redis.Redis,
    base_queue: str,
    status: str | tuple[str, ...] | None = None,
    limit: int | None = None,
    after: str | None = None,
    clips: bool = True,
) -> tuple[list[JobRecord], bool]:
    """The newest `limit` jobs' records (all: None) listed after job `after` (the last of the previous
    page), scheduled ones with their due times; and whether more follow. A page reads the records of its
    own jobs only (one more round trip, for every job's creation time, picks them), so a page of 100
    costs the same with 10,000 jobs as with 100. A part of a fanned-out book is never a row of its own
    (its book's record folds it in), so a page may hold fewer than `limit` jobs. `status`: one state or
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
                due_at[job_id] = datetime.fromtimestamp(entry[1], UTC)
            else:
                ids[registry.parse_job_id(entry)] = None
    if not clips:
        ids = {i: None for i in ids if not i.startswith(CLIP_PREFIX)}
    more = False
    if limit is not None:
        picked, more = _newest(r, list(ids), limit, after)
        ids = dict.fromkeys(picked)
    keep = {k for state in wanted for k in _ALSO.get(state, (state,))} if status else None
    records = [
        replace(rec, due_at=due_at.get(rec.id))
        for rec in read_records(r, ids).values()
        if not rec.book_of and (keep is None or rec.status in keep)  # a part is shown in its book's row
    ]
    records.sort(key=lambda rec: (rec.created_at or "", rec.id), reverse=True)
    return records, more


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


def list_row(rec: JobRecord, root: Path) -> dict[str, Any]:
    """A job as `narrate list` shows it (JSON-able)."""
    running = rec.running
    return {
        "id": rec.id,
        "document": rec.document or rec.description,
        "status": rec.status,
        "priority": rec.priority,
        "done": rec.done,
        "total": rec.total,
        "percent": rec.percent,
        "audio_seconds": rec.progress.get("audio_seconds"),
        "realtime_factor": rec.progress.get("realtime_factor") if running else None,
        "eta_seconds": rec.progress.get("eta_seconds") if running else None,
        "output": str(root / rec.meta["output"]) if rec.meta.get("output") else None,
        "created_at": rec.created_at,
        "scheduled_for": isoformat(rec.due_at),
        "error": rec.error,
        "stopping": rec.stopping,
        "host": rec.host,
        "redo_of": rec.meta.get("redo_of"),  # `narrate redo`: the job it redoes (jobs/task/superseding.py)
        "superseded_by": rec.meta.get("superseded_by"),  # ... and the one that redid it
        "voice": rec.meta.get("voice"),  # what the job speaks in (a saved voice's name, a sample, a preset)
        "voice_name": rec.meta.get("voice_name"),
        "voice_sample": rec.meta.get("voice_sample"),
    }
