"""The queue API the CLI (and any Python caller) uses: prepare, submit, status."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import redis
from rq import Queue, Retry
from rq.exceptions import NoSuchJobError
from rq.job import Job
from rq.serializers import JSONSerializer

from . import store
from .documents import Document, read_document
from .errors import JobNotFound
from .ffmpeg import ffmpeg_exe
from .outputs import relative_output
from .settings import Settings, check_quant
from .spec import JobSpec, frame_budget, job_timeout
from .voices import Voice, read_voice

JOB_FUNCTION = "narrate.jobs.task.narrate_job"
RESULT_TTL = 30 * 24 * 3600  # finished jobs (and their output paths) are kept 30 days
FAILURE_TTL = 30 * 24 * 3600


def queue(r: redis.Redis, name: str) -> Queue:
    """Every narrate queue uses the JSON serializer (pickle would let any Redis writer run code)."""
    return Queue(name, connection=r, serializer=JSONSerializer)


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


def submit(settings: Settings, r: redis.Redis, req: Request, queue_name: str | None = None) -> Job:
    doc_id = store.put_document(r, req.document)
    store.put_voice(r, req.voice.sha256, req.voice.wav)
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
    sentences = req.document.sentences
    budgets = [frame_budget(s, settings.max_frames) for s in sentences]
    return queue(r, queue_name or settings.queue).enqueue(
        JOB_FUNCTION,
        spec.to_json(),
        job_timeout=job_timeout(budgets, settings.runaway_retries),
        result_ttl=RESULT_TTL,
        failure_ttl=FAILURE_TTL,
        description=f"narrate {req.document.title} ({len(sentences)} sentences) -> {req.output}",
        meta={"progress": {"done": 0, "total": len(sentences), "audio_seconds": 0.0}},
        retry=Retry(max=settings.max_attempts - 1) if settings.max_attempts > 1 else None,
    )


def status(r: redis.Redis, job_id: str) -> dict:
    """A JSON-able view of a job: id, status, progress, output (finished), error (failed)."""
    try:
        job = Job.fetch(job_id, connection=r, serializer=JSONSerializer)
    except NoSuchJobError:
        raise JobNotFound(f"no job {job_id!r} (wrong id, or it expired)") from None
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
