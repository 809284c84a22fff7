"""A job as HTTP clients see it (the `narration` object): `narrate status` and `narrate list` with
OpenAI Batch's status words (queued | scheduled | in_progress | completed | failed | cancelled),
progress, the files it wrote (jobs/web/outputs.py) with their URLs, and the error."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import redis
from narrate.jobs.api import listing, previews
from narrate.jobs.api.status import status as job_status
from narrate.jobs.errors import JobNotFound
from narrate.jobs.settings import Settings
from narrate.jobs.web import outputs
from narrate.jobs.web.outputs import OutputFile
from rq.job import Job

STATES = {
    "queued": "queued",
    "deferred": "queued",  # a fanned-out book waiting for its parts (folded in by status and list)
    "scheduled": "scheduled",
    "started": "in_progress",
    "finished": "completed",
    "failed": "failed",
    "stopped": "failed",
    "canceled": "cancelled",
}
NARRATE_STATE = {"in_progress": "started", "completed": "finished", "cancelled": "canceled"}
TERMINAL = ("completed", "failed", "cancelled")
CLIP_PREFIX = "narrate-clip-"  # previews and speech: clip jobs, not narrations


def api_state(state: str) -> str:
    return STATES.get(state, "queued" if state == "unknown" else state)


def narrate_state(api: str) -> str:
    return NARRATE_STATE.get(api, api)


def check_id(job_id: str) -> str:
    if job_id.startswith(CLIP_PREFIX) or not job_id.startswith("narrate-") or len(job_id) > 200:
        raise JobNotFound(f"no narration {job_id[:80]!r} (wrong id, or it expired); GET /v1/narrations lists them")
    return job_id


def _progress(p: dict[str, Any], chapters: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "sentences_done": int(p.get("done", 0)),
        "sentences_total": int(p.get("total", 0)),
        "audio_s": float(p.get("audio_seconds") or 0.0),
        "realtime_factor": p.get("realtime_factor"),
        "eta_s": p.get("eta_seconds"),
        "chapters": chapters,
    }


def narration(r: redis.Redis, settings: Settings, job_id: str) -> dict[str, Any]:
    """One job, as `GET /v1/narrations/{id}` shows it."""
    return narration_and_files(r, settings, job_id)[0]


def narration_and_files(r: redis.Redis, settings: Settings, job_id: str) -> tuple[dict[str, Any], list[OutputFile]]:
    """`narration` and the files it lists (their paths on this host), read once."""
    st = job_status(r, check_id(job_id))
    found = _files(r, settings, job_id, st)
    created = r.hget(Job.key_for(job_id), "created_at")
    state = api_state(st["status"])
    result = st.get("result") or {}
    chapters = [{"title": c["title"], "start_s": c["start_seconds"]} for c in result.get("chapters", [])]
    if not chapters and state == "in_progress":  # while it is read: each chapter's sentences done, and its audio
        made = previews.ready(r, job_id)
        chapters = [{"title": c["title"], "sentences_done": c["done"], "sentences_total": c["total"],
                     "audio_url": chapter_url(job_id, n) if n in made else None}
                    for n, c in enumerate((st.get("progress") or {}).get("chapters", []), start=1)]  # fmt: skip
    files = [
        {"name": f.name, "url": file_url(job_id, f.name), "bytes": f.bytes, "duration_s": outputs.duration_s(f.path)}
        for f in found
    ]
    view = {
        "id": st["id"],
        "object": "narration",
        "status": state,
        "created_at": outputs.text(created) if created else st.get("enqueued_at"),
        "started_at": st.get("started_at"),
        "ended_at": st.get("ended_at"),
        "scheduled_for": st.get("scheduled_for"),
        "priority": st.get("priority"),
        "document": st.get("document"),
        "voice": st.get("voice"),
        "host": ", ".join(st.get("hosts") or []) or st.get("host") if state == "in_progress" else None,
        "progress": _progress(st.get("progress") or {}, chapters),
        "duration_s": st.get("duration_seconds"),
        "voices": result.get("voices"),
        "outputs": files,
        "error": st.get("error") if state == "failed" else None,
        "stopping": bool(st.get("cancel_requested")),
    }
    return view, found


def files_of(r: redis.Redis, settings: Settings, job_id: str) -> list[OutputFile]:
    """The files a finished narration wrote that this host can serve (none before it finished)."""
    return _files(r, settings, job_id, job_status(r, check_id(job_id)))


def _files(r: redis.Redis, settings: Settings, job_id: str, st: dict[str, Any]) -> list[OutputFile]:
    rel = (st.get("result") or {}).get("output_relative")
    if st["status"] != "finished" or not rel:
        return []
    return outputs.recorded(r, settings.output_dir, job_id, rel)


def file_url(job_id: str, name: str) -> str:
    return f"/v1/narrations/{job_id}/files/{quote(name)}"


def chapter_url(job_id: str, number: int) -> str:
    return f"/v1/narrations/{job_id}/chapters/{number}/audio"


def listed(r: redis.Redis, settings: Settings, state: str | None = None) -> list[dict[str, Any]]:
    """Every narration of the server's queues, newest first (`narrate list`), in `state` if given."""
    rows = listing.list_jobs(r, settings.queue, Path(settings.output_dir), narrate_state(state) if state else None)
    return [_row(row) for row in rows if not row["id"].startswith(CLIP_PREFIX)]


def _row(row: dict[str, Any]) -> dict[str, Any]:
    state = api_state(row["status"])
    progress = {"done": row["done"], "total": row["total"], "audio_seconds": row["audio_seconds"],
                "realtime_factor": row["realtime_factor"], "eta_seconds": row["eta_seconds"]}  # fmt: skip
    return {
        "id": row["id"],
        "object": "narration",
        "status": state,
        "created_at": row["created_at"],
        "started_at": None,
        "ended_at": None,
        "scheduled_for": row["scheduled_for"],
        "priority": row["priority"],
        "document": row["document"],
        "voice": row["voice"],
        "host": row.get("host"),
        "progress": _progress(progress, []),
        "duration_s": None,
        "voices": None,
        "outputs": [],
        "error": row["error"] if state == "failed" else None,
        "stopping": bool(row["stopping"]),
    }
