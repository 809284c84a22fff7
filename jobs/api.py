"""The queue API the CLI (and any Python caller) uses: prepare, submit, status."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import redis
from rq import Queue, Retry
from rq.exceptions import DuplicateJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from . import store
from .documents import Document, read_document
from .ffmpeg import ffmpeg_exe
from .lifecycle import fetch, queue, requeue_front, resume
from .outputs import relative_output
from .settings import Settings, check_quant
from .spec import JobSpec, frame_budget, job_timeout
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


def prepare(
    settings: Settings,
    document: Path,
    voice: Path,
    output: str | Path | None = None,
    model: str | None = None,
    quant: str | None = None,
) -> Request:
    """Validate every input before anything is stored or enqueued (raises BadInput)."""
    check_quant(quant)
    doc = read_document(Path(document))
    if output is None:
        output = Path.cwd() / f"{Path(document).stem}.mp3"
    rel = relative_output(settings.output_dir, output)
    v = read_voice(Path(voice), ffmpeg_exe(settings.ffmpeg))
    return Request(document=doc, voice=v, output=rel, model=model, quant=quant)


@dataclass(frozen=True)
class Submitted:
    job: Job
    duplicate: str | None = None  # None, or what the identical earlier submission was: queued, done, resumed


def job_id_for(spec: JobSpec, queue_name: str) -> str:
    """Identical submissions (same document, voice, settings, output) get the same job id."""
    blob = json.dumps([spec.to_json(), queue_name], sort_keys=True).encode()
    return "narrate-" + hashlib.sha256(blob).hexdigest()[:32]


def submit(settings: Settings, r: redis.Redis, req: Request, queue_name: str | None = None) -> Submitted:
    """Enqueue one job, or find the identical one submitted before (atomically, even when two
    processes submit at once): queued/started -> that job; finished with its output in place ->
    that job; failed or stopped -> requeued (it resumes from its checkpoints)."""
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
    )
    job_id = job_id_for(spec, queue_name)
    q = queue(r, queue_name)
    try:
        return Submitted(_enqueue(q, job_id, spec, req, timeout, settings))
    except DuplicateJobError:
        pass
    job = Job.fetch(job_id, connection=r, serializer=JSONSerializer)
    state = job.get_status(refresh=False)
    if state == JobStatus.FINISHED:
        if (settings.output_dir.expanduser() / spec.output).exists():  # as this host sees the output root
            return Submitted(job, "done")
        job.delete()  # its output is gone: narrate it again
        return Submitted(_enqueue(q, job_id, spec, req, timeout, settings))
    if state in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        return Submitted(requeue_front(r, job, "resume"), "resumed")
    return Submitted(job, "queued")


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
    if state is not None and state.value == "failed":
        out["error"] = meta.get("error") or _last_line(job)
    return out


def _last_line(job: Job) -> str:
    res = job.latest_result()
    text = (res.exc_string if res is not None else None) or job.exc_info or "failed"
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "failed"
