"""The queue API the CLI (and any Python caller) uses: prepare, submit, status."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import redis
from rq import Queue, Retry, Worker
from rq.exceptions import DuplicateJobError
from rq.job import Job, JobStatus

from . import lifecycle, ownership, store
from .budgets import frame_budget
from .documents import Document, read_document
from .durability import durable_writes
from .errors import JobNotFound
from .ffmpeg import ffmpeg_exe
from .lifecycle import fetch, queue, requeue_front
from .model_choice import check_model
from .outputs import relative_output
from .settings import Settings, check_quant
from .spec import JobSpec, job_timeout
from .voices import Voice, read_voice

JOB_FUNCTION = "narrate.jobs.task.narrate_job"  # the only function a narrate worker runs
DAY_S = 24 * 3600
__all__ = ["JOB_FUNCTION", "Request", "Submitted", "prepare", "resume", "status", "submit"]


@dataclass(frozen=True)
class Request:
    """A validated narration request; building one touches no server."""

    document: Document
    voice: Voice
    output: str  # relative to the output root
    model: str | None
    quant: str | None
    overwrite: bool = False  # replace a file at the output path that narrate did not write


def prepare(
    settings: Settings,
    document: Path,
    voice: Path,
    output: str | Path | None = None,
    model: str | None = None,
    quant: str | None = None,
    overwrite: bool = False,
) -> Request:
    """Validate every input before anything is stored or enqueued (raises BadInput)."""
    check_quant(quant)
    model = check_model(model)
    doc = read_document(Path(document))
    if output is None:  # <output root>/<document stem>.mp3; a relative output is taken from the root
        output = f"{Path(document).stem}.mp3"
    rel = relative_output(settings.output_dir, output)
    v = read_voice(Path(voice), ffmpeg_exe(settings.ffmpeg))
    return Request(document=doc, voice=v, output=rel, model=model, quant=quant, overwrite=overwrite)


@dataclass(frozen=True)
class Submitted:
    job: Job
    duplicate: str | None = None  # None, or what the identical earlier submission was: queued, done, resumed
    note: str | None = None  # e.g. "replaces book.m4b written by job X"


def job_id_for(spec: JobSpec, queue_name: str) -> str:
    """Identical submissions (same document, voice, settings, output) get the same job id."""
    blob = json.dumps([spec.to_json(), queue_name], sort_keys=True).encode()
    return "narrate-" + hashlib.sha256(blob).hexdigest()[:32]


def _submit(settings: Settings, r: redis.Redis, req: Request, queue_name: str | None = None) -> Submitted:
    """Enqueue one job, or find the identical one submitted before (atomically, even when two
    processes submit at once): queued/started -> that job; finished with its own output in place ->
    that job; failed or stopped -> requeued (it resumes from its checkpoints). The output path is
    claimed first (jobs.ownership): another pending job's path, or a file narrate did not write, is
    refused."""
    queue_name = queue_name or settings.queue
    sentences = req.document.sentences
    budgets = [frame_budget(s, settings.max_frames) for s in sentences]
    timeout = job_timeout(budgets, settings.runaway_retries)
    keep_s = settings.keep_days * DAY_S + timeout  # refreshed when the job starts and when it ends
    doc_id = store.put_document(r, req.document, keep_s)
    store.put_voice(r, req.voice.sha256, req.voice.wav, keep_s)
    spec = JobSpec(
        document=doc_id,
        voice=req.voice.sha256,
        output=req.output,
        model=req.model,
        quant=req.quant,
        seed=settings.seed,
        max_frames=settings.max_frames,
        sentence_pause_ms=settings.sentence_pause_ms,
        paragraph_pause_ms=settings.paragraph_pause_ms,
        overwrite=req.overwrite,
    )
    job_id = job_id_for(spec, queue_name)
    final = settings.output_dir.expanduser().resolve() / spec.output  # as this host sees the output root
    q = queue(r, queue_name)
    earlier = _finished(r, job_id)
    if earlier is not None:
        if _own_output_in_place(r, earlier, final):
            return Submitted(earlier, "done")
        earlier.delete()  # its output is gone or is not its own any more: narrate it again
    note = ownership.claim(r, spec.output, job_id, final, req.overwrite)
    try:
        return Submitted(_enqueue(q, job_id, spec, req, timeout, settings), note=note)
    except DuplicateJobError:
        pass
    job = fetch(r, job_id)
    if job.get_status(refresh=False) in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        return Submitted(requeue_front(r, job, "resume"), "resumed", note)
    return Submitted(job, "queued", note)


def submit(settings: Settings, r: redis.Redis, req: Request, queue_name: str | None = None) -> Submitted:
    """_submit, acknowledged only once the job is on the server's disk (raises NotDurable if it
    cannot persist: a full disk), see durability.py."""
    with durable_writes(r):
        return _submit(settings, r, req, queue_name)


def _finished(r: redis.Redis, job_id: str) -> Job | None:
    try:
        job = fetch(r, job_id)
    except JobNotFound:
        return None
    return job if job.get_status(refresh=False) == JobStatus.FINISHED else None


def _own_output_in_place(r: redis.Redis, job: Job, final: Path) -> bool:
    """The finished job's output is there and is what the job wrote (not replaced or edited)."""
    result = job.return_value(refresh=True) or {}
    want = result.get("output_sha256")
    if not want or not final.is_file() or ownership.replaced_by(r, result.get("output_relative", ""), job.id):
        return False
    return ownership.sha256_file(final) == want


def _enqueue(q: Queue, job_id: str, spec: JobSpec, req: Request, timeout: int, settings: Settings) -> Job:
    sentences = req.document.sentences
    return q.enqueue(
        JOB_FUNCTION,
        spec.to_json(),
        job_id=job_id,
        unique=True,
        job_timeout=timeout,
        result_ttl=settings.keep_days * DAY_S,
        failure_ttl=settings.keep_days * DAY_S,
        description=f"narrate {req.document.title} ({len(sentences)} sentences) -> {req.output}",
        meta={
            "progress": {"done": 0, "total": len(sentences), "audio_seconds": 0.0},
            "max_retries": settings.max_attempts - 1,
        },
        retry=Retry(max=settings.max_attempts - 1) if settings.max_attempts > 1 else None,
    )


def resume(r: redis.Redis, job_ids: list[str], queue_name: str) -> list[tuple[str, str]]:
    """lifecycle.resume, acknowledged only once the requeues are on the server's disk."""
    with durable_writes(r):
        return lifecycle.resume(r, job_ids, queue_name)


def unattended_queue(r: redis.Redis, job_id: str) -> str | None:
    """The job's queue when the job is queued there and no worker takes jobs from it (it would
    wait until one starts), else None."""
    job = fetch(r, job_id)
    if job.get_status(refresh=False) != JobStatus.QUEUED:
        return None
    q = queue(r, job.origin)
    return None if Worker.all(queue=q) else q.name


def status(r: redis.Redis, job_id: str) -> dict:
    """A JSON-able view of a job: id, status, progress, output (finished), error (failed)."""
    job = fetch(r, job_id)
    state = job.get_status(refresh=False)
    meta = job.get_meta(refresh=False) or {}
    out: dict = {
        "id": job.id,
        "status": state.value if state is not None else "unknown",
        "progress": meta.get("progress", {"done": 0, "total": 0, "audio_seconds": 0.0}),
        "description": job.description,
        "enqueued_at": job.enqueued_at.isoformat() if job.enqueued_at else None,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "ended_at": job.ended_at.isoformat() if job.ended_at else None,
    }
    if state is not None and state.value == "finished":
        result = job.return_value(refresh=True) or {}
        out.update(
            output=result.get("output"),
            duration_seconds=result.get("duration_seconds"),
            result=result,
        )
        replaced = ownership.replaced_by(r, result.get("output_relative", ""), job.id)
        if replaced:
            out["output_replaced_by"] = replaced  # a later job wrote the same output path
    if state is not None and state.value == "failed":
        out["error"] = meta.get("error") or _last_line(job)
    return out


def _last_line(job: Job) -> str:
    res = job.latest_result()
    text = (res.exc_string if res is not None else None) or job.exc_info or "failed"
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "failed"
