"""The queue API the CLI (and any Python caller) uses: prepare, submit, status."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import redis
from rq import Queue, Retry
from rq.exceptions import DuplicateJobError, NoSuchJobError
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry, StartedJobRegistry
from rq.serializers import JSONSerializer

from . import store
from .documents import Document, read_document
from .durability import durable_writes
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


@dataclass(frozen=True)
class Submitted:
    job: Job
    duplicate: str | None = None  # None, or what the identical earlier submission was: queued, done, resumed


def job_id_for(spec: JobSpec, queue_name: str) -> str:
    """Identical submissions (same document, voice, settings, output) get the same job id."""
    blob = json.dumps([spec.to_json(), queue_name], sort_keys=True).encode()
    return "narrate-" + hashlib.sha256(blob).hexdigest()[:32]


def _submit(settings: Settings, r: redis.Redis, req: Request, queue_name: str | None = None) -> Submitted:
    """Enqueue one job, or find the identical one submitted before (atomically, even when two
    processes submit at once): queued/started -> that job; finished with its output in place ->
    that job; failed or stopped -> requeued (it resumes from its checkpoints)."""
    queue_name = queue_name or settings.queue
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
    job_id = job_id_for(spec, queue_name)
    q = queue(r, queue_name)
    try:
        return Submitted(_enqueue(q, job_id, spec, req, budgets, settings))
    except DuplicateJobError:
        pass
    job = Job.fetch(job_id, connection=r, serializer=JSONSerializer)
    state = job.get_status(refresh=False)
    if state == JobStatus.FINISHED:
        if (settings.output_dir.expanduser() / spec.output).exists():  # as this host sees the output root
            return Submitted(job, "done")
        job.delete()  # its output is gone: narrate it again
        return Submitted(_enqueue(q, job_id, spec, req, budgets, settings))
    if state in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        return Submitted(requeue(r, job), "resumed")
    return Submitted(job, "queued")


def submit(settings: Settings, r: redis.Redis, req: Request, queue_name: str | None = None) -> Submitted:
    """_submit, acknowledged only once the job is on the server's disk (raises NotDurable if it
    cannot persist: a full disk), see durability.py."""
    with durable_writes(r):
        return _submit(settings, r, req, queue_name)


def _enqueue(q: Queue, job_id: str, spec: JobSpec, req: Request, budgets: list[int], settings: Settings) -> Job:
    sentences = req.document.sentences
    return q.enqueue(
        JOB_FUNCTION,
        spec.to_json(),
        job_id=job_id,
        unique=True,
        job_timeout=job_timeout(budgets, settings.runaway_retries),
        result_ttl=RESULT_TTL,
        failure_ttl=FAILURE_TTL,
        description=f"narrate {req.document.title} ({len(sentences)} sentences) -> {req.output}",
        meta={
            "progress": {"done": 0, "total": len(sentences), "audio_seconds": 0.0},
            "max_retries": settings.max_attempts - 1,
        },
        retry=Retry(max=settings.max_attempts - 1) if settings.max_attempts > 1 else None,
    )


def started_entries(r: redis.Redis, registry: StartedJobRegistry, job_id: str) -> list[bytes]:
    """The registry's "job_id:execution_id" members of one job."""
    return [m for m in r.zrange(registry.key, 0, -1) if m.decode().split(":")[0] == job_id]


def requeue(r: redis.Redis, job: Job) -> Job:
    """Put a failed, stopped or abandoned job back in its queue; it resumes from its checkpoints."""
    job.meta.pop("error", None)
    job.meta["attempts"] = 0
    job.save_meta()
    q = queue(r, job.origin)
    started = StartedJobRegistry(queue=q)
    with r.pipeline() as p:
        FailedJobRegistry(queue=q).remove(job, pipeline=p)
        for member in started_entries(r, started, job.id):
            p.zrem(started.key, member)
        job.retries_left = int(job.meta.get("max_retries", 0))  # a resumed job gets its retries back
        q._enqueue_job(job, pipeline=p, at_front=True)
        p.execute()
    return job


ABANDONED_AFTER_S = 90  # a busy worker beats every 10 s


def worker_alive(r: redis.Redis, worker_name: str | None) -> bool:
    if not worker_name:
        return False
    beat = r.hget(f"rq:worker:{worker_name}", "last_heartbeat")
    if beat is None:
        return False
    last = datetime.fromisoformat(beat.decode().replace("Z", "+00:00"))
    if last.tzinfo is None:
        last = last.replace(tzinfo=UTC)
    return (datetime.now(UTC) - last).total_seconds() < ABANDONED_AFTER_S


def resume(r: redis.Redis, job_ids: list[str], queue_name: str) -> list[tuple[str, str]]:
    """Requeue the given jobs (or, with none given, every failed job and every started job whose
    worker is gone, of the queue). Returns (job id, what happened) pairs."""
    q = queue(r, queue_name)
    if not job_ids:
        job_ids = FailedJobRegistry(queue=q).get_job_ids() + StartedJobRegistry(queue=q).get_job_ids(cleanup=False)
    out = []
    for job_id in dict.fromkeys(job_ids):
        try:
            job = Job.fetch(job_id, connection=r, serializer=JSONSerializer)
        except NoSuchJobError:
            raise JobNotFound(f"no job {job_id!r} (wrong id, or it expired)") from None
        state = job.get_status(refresh=False)
        if state in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
            requeue(r, job)
            out.append((job_id, "requeued"))
        elif state == JobStatus.STARTED and not worker_alive(r, job.worker_name):
            requeue(r, job)
            out.append((job_id, "requeued (its worker is gone)"))
        else:
            out.append((job_id, f"left alone ({state.value if state else 'unknown'})"))
    return out


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
