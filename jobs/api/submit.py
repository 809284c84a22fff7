"""The queue API the CLI (and any Python caller) uses: prepare, submit, status."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import redis
from narrate.jobs.api.options import Options
from narrate.jobs.api.prepare import Request, prepare, prepare_many, prepare_read
from narrate.jobs.api.record import due_time
from narrate.jobs.api.status import status
from narrate.jobs.book.plan import spoken_paragraphs
from narrate.jobs.book.spec import DEFAULT_RETAKES, JobSpec, job_timeout
from narrate.jobs.counts import count
from narrate.jobs.documents.budgets import frame_budget
from narrate.jobs.errors import BadInput, JobNotFound, NarrateError
from narrate.jobs.fanout import split as fanout
from narrate.jobs.feeds import store as feeds
from narrate.jobs.outputs import ownership
from narrate.jobs.queue import books, lifecycle
from narrate.jobs.queue.lifecycle import requeue_front
from narrate.jobs.queue.queues import queue_for
from narrate.jobs.queue.resume import Resumed
from narrate.jobs.queue.resume import resume as resume_jobs
from narrate.jobs.server import store
from narrate.jobs.server.durability import durable_writes
from narrate.jobs.server.records import check_key_types, fetch, queue
from narrate.jobs.settings import DAY_S, Settings
from rq import Queue, Retry, Worker
from rq.exceptions import DuplicateJobError
from rq.job import Job, JobStatus

JOB_FUNCTION = "narrate.jobs.task.narrate_job"  # the only function a narrate worker runs
__all__ = [
    "JOB_FUNCTION",
    "Options",
    "Planned",
    "Request",
    "Submitted",
    "check_output",
    "plan",
    "prepare",
    "prepare_many",
    "prepare_read",
    "resume",
    "status",
    "submit",
    "submit_many",
    "submit_unacknowledged",
    "unattended_queue",
]


@dataclass(frozen=True)
class Submitted:
    job: Job
    duplicate: str | None = None  # None, or what the identical earlier submission was: queued, scheduled,
    # done, resumed (failed or canceled: requeued now) or rescheduled (failed or canceled: scheduled again)
    note: str | None = None  # e.g. "replaces book.m4b written by job X"
    due: datetime | None = None  # when it runs, for a scheduled job


@dataclass(frozen=True)
class Planned:
    """What a request becomes, computed without a server: the job's spec, id and timeout."""

    spec: JobSpec
    job_id: str
    final: Path  # the output as this host sees the output root
    timeout: int
    keep_s: int  # how long the stored document and voice are kept


def job_id_for(spec: JobSpec, queue_name: str) -> str:
    """Identical submissions (same document, voice, settings, output) get the same job id."""
    blob = json.dumps([spec.to_json(), queue_name], sort_keys=True).encode()
    return "narrate-" + hashlib.sha256(blob).hexdigest()[:32]


def plan(settings: Settings, req: Request, queue_name: str | None = None, at: datetime | None = None) -> Planned:
    """The job a request makes, without touching a server. Its id depends on the document, voice,
    settings, output and base queue (not on its priority or due time: the same book submitted
    again, sooner or later, is the same job)."""
    knob = functools.partial(req.options.knob, settings=settings)  # the request's numbers, else this host's
    spoken = [s for para in spoken_paragraphs(req.document, req.lexicon) for s in para]
    budgets = [frame_budget(s, knob("max_frames")) for s in spoken]
    proof, retakes = req.options.proof, req.options.retakes if req.options.retakes is not None else DEFAULT_RETAKES
    timeout = job_timeout(budgets, settings.runaway_retries, retakes if proof else 0)
    wait_s = max(0, int((at - datetime.now(UTC)).total_seconds())) if at is not None else 0
    spec = JobSpec(
        document=store.document_id(req.document),
        voice=req.voice.ref.spec_voice,
        instruct=req.voice.ref.instruct,
        cast=req.cast,
        output=req.output,
        model=req.model,
        quant=req.quant,
        seed=req.narrator_seed if req.narrator_seed is not None else knob("seed"),
        max_frames=knob("max_frames"),
        sentence_pause_ms=knob("sentence_pause_ms"),
        paragraph_pause_ms=knob("paragraph_pause_ms"),
        overwrite=req.overwrite,
        lexicon=req.lexicon,
        chapter_pause_ms=knob("chapter_pause_ms"),
        speaker_pause_ms=settings.speaker_pause_ms,
        library=req.options.library,
        library_layout=req.options.library_layout,
        abs_url=req.options.abs_url,
        proof=proof,
        retakes=retakes,
        word_timings=req.options.word_timings,
        **req.book.spec_fields(),
    )
    final = settings.output_dir.expanduser().resolve() / spec.output
    keep_s = settings.keep_days * DAY_S + timeout + wait_s  # refreshed when the job starts and when it ends
    return Planned(spec, job_id_for(spec, queue_name or settings.queue), final, timeout, keep_s)


def check_output(settings: Settings, r: redis.Redis, req: Request, queue_name: str | None = None) -> None:
    """Would `submit` accept this request's output path now? (raises BadInput; stores nothing)."""
    p = plan(settings, req, queue_name)
    ownership.check(r, p.spec.output, p.job_id, p.final, req.overwrite)
    _check_beside(r, p, req)


def _submit(
    settings: Settings,
    r: redis.Redis,
    req: Request,
    queue_name: str | None = None,
    at: datetime | None = None,
) -> Submitted:
    """_enqueue_request, then the job joins the request's podcast feed (`--feed`), if any."""
    done = _enqueue_request(settings, r, req, queue_name, at)
    if req.options.feed:
        feeds.add(r, req.options.feed, [done.job.id])
    return done


def _enqueue_request(
    settings: Settings,
    r: redis.Redis,
    req: Request,
    queue_name: str | None = None,
    at: datetime | None = None,
) -> Submitted:
    """Enqueue one job (or schedule it for `at`), or find the identical one submitted before
    (atomically, even when two processes submit at once): queued/scheduled/started -> that job;
    finished with its own output in place -> that job; failed, stopped or canceled -> requeued
    (or scheduled again for `at`; it resumes from its checkpoints). The output path is claimed
    first (jobs.outputs.ownership): another pending job's path, or a file narrate did not write, is refused."""
    p = plan(settings, req, queue_name, at)
    q = queue(r, queue_for(queue_name or settings.queue, req.priority))
    _check_queue_keys(r, q)
    store.put_document(r, req.document, p.keep_s)
    for sample in (req.voice.sample, *req.cast_samples):
        if sample is not None:
            store.put_voice(r, sample.sha256, sample.wav, p.keep_s)
    if req.book.cover:
        store.put_cover(r, req.book.cover, p.keep_s)
    earlier = _finished(r, p.job_id)
    if earlier is not None:
        if _own_output_in_place(r, earlier, p.final):
            return Submitted(earlier, "done")
        earlier.delete()  # its output is gone or is not its own any more: narrate it again
    _check_beside(r, p, req)
    ranges, warning = _fan_out(settings, r, req, p, at)
    note = ownership.claim(r, p.spec.output, p.job_id, p.final, req.overwrite, p.keep_s)
    note = "; ".join(filter(None, [note, warning])) or None
    try:
        return Submitted(_enqueue(q, p, req, settings, at, ranges), note=note, due=at)
    except DuplicateJobError:
        pass
    job = fetch(r, p.job_id)
    state = job.get_status(refresh=False)
    if books.is_book(job) and state in (JobStatus.FAILED, JobStatus.CANCELED, JobStatus.DEFERRED):
        books.resume_book(r, job)  # its failed or canceled parts run again
        return Submitted(job, "resumed" if state != JobStatus.DEFERRED else "queued", note)
    if state in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        if at is not None:
            return Submitted(lifecycle.reschedule(r, job, at, into=q.name), "rescheduled", note, at)
        return Submitted(requeue_front(r, job, "resume", into=q.name), "resumed", note)
    if state == JobStatus.SCHEDULED:
        return Submitted(job, "scheduled", note, due_time(r, job))
    return Submitted(job, "queued", note)


def _check_queue_keys(r: redis.Redis, q: Queue) -> None:
    """The keys an enqueue writes are of rq's types (else it would fail halfway, see records)."""
    from rq.registry import DeferredJobRegistry, ScheduledJobRegistry

    check_key_types(
        r,
        {
            q.key: "list",
            "rq:queues": "set",
            ScheduledJobRegistry(queue=q).key: "zset",
            DeferredJobRegistry(queue=q).key: "zset",
        },
    )


def _check_beside(r: redis.Redis, p: Planned, req: Request) -> None:
    """The subtitle files written beside the output follow its ownership rules (never replacing a
    file narrate did not write); the worker checks them again, and the split files, before writing."""
    rel = Path(p.spec.output)
    for fmt in filter(None, p.spec.subtitles.split(",")):
        side = rel.with_suffix(f".{fmt}")
        ownership.check(r, side.as_posix(), p.job_id, p.final.with_suffix(f".{fmt}"), req.overwrite)


def submit(
    settings: Settings,
    r: redis.Redis,
    req: Request,
    queue_name: str | None = None,
    at: datetime | None = None,
) -> Submitted:
    """_submit, acknowledged only once the job is on the server's disk (raises NotDurable if it
    cannot persist: a full disk), see durability.py. The priority is the request's."""
    with durable_writes(r):
        return _submit(settings, r, req, queue_name, at)


def submit_many(
    settings: Settings,
    r: redis.Redis,
    requests: list[Request],
    at: datetime | None = None,
) -> list[Submitted]:
    """Submit every request, acknowledged once all are on the server's disk. Every output path is
    checked against the server first (another pending job's path, a file narrate did not write),
    so a refused one leaves nothing enqueued."""
    for req in requests:
        check_output(settings, r, req)
    done: list[Submitted] = []
    with durable_writes(r):
        for req in requests:
            try:
                done.append(_submit(settings, r, req, None, at))
            except NarrateError as e:  # another submit took an output since the check: say what went in
                if not done:
                    raise
                raise type(e)(f"{e} (submitted before it: {', '.join(s.job.id for s in done)})") from None
    return done


def _finished(r: redis.Redis, job_id: str) -> Job | None:
    try:
        job = fetch(r, job_id)
    except JobNotFound:
        return None
    return job if job.get_status(refresh=False) == JobStatus.FINISHED else None


def _own_output_in_place(r: redis.Redis, job: Job, final: Path) -> bool:
    """The finished job's output is there and is what the job wrote (not replaced or edited)."""
    result = job.return_value(refresh=True) or {}
    want: str | None = result.get("output_sha256")
    if not want or not final.is_file() or ownership.replaced_by(r, result.get("output_relative", ""), job.id):
        return False
    return ownership.sha256_file(final) == want


def _fan_out(settings: Settings, r: redis.Redis, req: Request, p: Planned, at: datetime | None) -> tuple[list, str]:
    """The sentence ranges of the book's part jobs (none: one job) and a warning (jobs.fanout.split)."""
    if at is not None:
        if req.fan_out not in (None, "none"):
            raise BadInput("--fan-out cannot be combined with --at/--in yet: submit the book when it should run")
        return [], ""
    how = fanout.choose(r, req.document, req.fan_out)
    ranges = fanout.cut(req.document, how, req.lexicon) if how != "none" else []
    if len(ranges) < 2:
        return [], ""
    ranges, warning = fanout.within_cap(req.document, ranges, settings.fanout_max_mb, req.lexicon)
    return (ranges if ranges else []), warning or ""


def _enqueue(
    q: Queue, p: Planned, req: Request, settings: Settings, at: datetime | None, ranges: Sequence[tuple[int, int]] = ()
) -> Job:
    """Enqueue the job, or schedule it for `at` (raises DuplicateJobError if the id exists); with
    `ranges`, its part jobs first, and the job waits for them (it stitches the book)."""
    n = len(req.document.sentences)
    keep_s, document = settings.keep_days * DAY_S, req.source or req.document.title
    parts = []
    if ranges:
        parts = fanout.enqueue_parts(q, p.job_id, p.spec, req.document, ranges, settings, keep_s, document)
    job = q.create_job(
        JOB_FUNCTION,
        args=(p.spec.to_json(), {"parts": parts}) if parts else (p.spec.to_json(),),
        depends_on=parts or None,  # type: ignore[arg-type]  # rq's list[Dependency | Job | str] is invariant; it only reads
        job_id=p.job_id,
        timeout=p.timeout,
        result_ttl=settings.keep_days * DAY_S,
        failure_ttl=settings.keep_days * DAY_S,
        description=f"narrate {req.document.title} ({count(n, 'sentence')}) -> {req.output}",
        meta={
            "progress": {"done": 0, "total": n, "audio_seconds": 0.0, "realtime_factor": None, "eta_seconds": None},
            "max_retries": settings.max_attempts - 1,
            "document": req.source or req.document.title,
            "output": req.output,
            "voice": req.voice.describe(),
            **({"voice_name": req.voice.name} if req.voice.name else {}),
            **({"voice_sample": req.voice.sample.sha256} if req.voice.sample else {}),
            **({"cast": sorted(req.cast)} if req.cast else {}),
            **({"parts": parts} if parts else {}),
        },
        retry=Retry(max=settings.max_attempts - 1) if settings.max_attempts > 1 else None,
        status=JobStatus.SCHEDULED if at is not None else JobStatus.QUEUED,
    )
    if at is not None:
        return q.schedule_job(job, at, unique=True)  # atomic: id check, job, registry entry
    return q.enqueue_job(job, unique=not parts)  # parts: enqueue_parts made sure the id is new


def resume(r: redis.Redis, job_ids: list[str], queue_name: str) -> list[Resumed]:
    """jobs.queue.resume, acknowledged only once the requeues are on the server's disk."""
    with durable_writes(r):
        return resume_jobs(r, job_ids, queue_name)


def unattended_queue(r: redis.Redis, job_id: str) -> str | None:
    """The job's queue when the job is queued there and no worker takes jobs from it (it would
    wait until one starts), else None."""
    job = fetch(r, job_id)
    if job.get_status(refresh=False) != JobStatus.QUEUED:
        return None
    q = queue(r, job.origin)
    return None if Worker.all(queue=q) else q.name


def submit_unacknowledged(settings: Settings, r: redis.Redis, req: Request, queue_name: str | None = None) -> Submitted:
    """`submit` without its durability wait: the caller submits many inside one
    ``durability.durable_writes`` block and is acknowledged once for all of them."""
    return _submit(settings, r, req, queue_name)
