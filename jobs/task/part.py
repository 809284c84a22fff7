"""A part job of a fanned-out book (jobs.fanout.split): the book's plan (the same sentences, seeds and budgets
as a single-host job), but only the part's sentences are synthesized; each finished sentence is
checkpointed on this host as usual and sent to Redis every few sentences (jobs.fanout.partaudio), where the
book's job (the stitch) finds it.

A part taken over from a host that died mid-part skips every sentence already in Redis; this host's
own checkpoints that are not in Redis yet (a part requeued on the host that ran it) are sent without
being synthesized again. A part that fails for good fails its book with the part's error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from narrate.jobs.book.checkpoints import CheckpointStore
from narrate.jobs.book.plan import Plan, make_plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.fanout import partaudio
from narrate.jobs.fanout.split import Part
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.queue.books import fail_book
from narrate.jobs.server import store
from narrate.jobs.settings import DAY_S, SAMPLE_RATE
from narrate.jobs.task.attempt import begin_attempt, engine_voice, keep_inputs, record_failure, settle_cache, synthesize
from narrate.jobs.task.context import JobContext, StopRequested
from narrate.jobs.task.progress import Progress


class UploadingStore(CheckpointStore):
    """A checkpoint store that also hands every sentence it saves to the uploader."""

    def __init__(self, root: Path, plan: Plan, part: Part, uploader: partaudio.Uploader) -> None:
        super().__init__(root)
        self.uploader = uploader
        self.indices: dict[str, list[int]] = {}  # one text may occur twice in a book: one key, two indices
        for i in range(part.first, part.end):
            self.indices.setdefault(plan.keys[i], []).append(i)

    def save_samples(self, key: str, ints: np.ndarray, frames: int, runaway: bool, takes: int) -> None:
        super().save_samples(key, ints, frames, runaway, takes)
        cp = self.load(key)
        if cp is None:  # removed at once (a cache prune): the stitch synthesizes it
            return
        for i in self.indices.get(key, []):
            self.uploader.add(i, key, cp)


def part_job(ctx: JobContext, spec_json: dict, part_json: dict) -> dict:
    part = Part.from_json(part_json)
    try:
        return _part(ctx, JobSpec.from_json(spec_json), part)
    except StopRequested:
        raise
    except Exception as e:
        error = record_failure(ctx.job, e)
        if not ctx.job.retries_left:  # no retry left: the book fails with this part's error
            fail_book(ctx.job.connection, part.book, f"part {part.index} ({ctx.job.id}) failed: {error}")
        raise


def _part(ctx: JobContext, spec: JobSpec, part: Part) -> dict:
    job = ctx.job
    r = job.connection
    begin_attempt(ctx)
    keep_inputs(job, spec)
    doc = store.get_document(r, spec.document)
    engine = ctx.engine_for(spec.model, spec.quant)
    job.meta["model"] = f"{engine.source} ({engine.quant})"
    plan = make_plan(doc, spec, engine.model_key, engine.quant)
    uploader = partaudio.Uploader(r, part.book, ffmpeg_exe(ctx.settings.ffmpeg), int(job.failure_ttl or DAY_S))
    checkpoints = UploadingStore(ctx.settings.home / "checkpoints", plan, part, uploader)
    sent = partaudio.uploaded(r, part.book)
    todo: list[Sentence] = []
    cached = 0  # samples of the sentences this host had already (those another host sent are not counted)
    for s in plan.sentences[part.first : part.end]:
        if s.index in sent:
            continue
        cp = checkpoints.load(plan.keys[s.index])
        if cp is None:
            todo.append(s)
        else:
            uploader.add(s.index, plan.keys[s.index], cp)
            cached += cp.pcm.size
    n = part.end - part.first
    progress = Progress(job, n, done=n - len(todo), listener=ctx.on_progress, audio_seconds=cached / SAMPLE_RATE)
    progress.save()
    ctx.check_canceled(progress.done, progress.total)
    try:
        if todo:
            synthesize(ctx, engine, engine_voice(ctx, engine, spec), plan, todo, checkpoints, progress)
    finally:
        if ctx.canceled != "taken":  # taken over by another worker (this one was away): it sends the part
            uploader.flush()  # what is synthesized travels, also when the job stops here
    progress.save()
    settle_cache(ctx, checkpoints, plan)
    return {
        "book": part.book,
        "part": part.index,
        "sentences": n,
        "synthesized": progress.synthesized,
        "uploaded_sentences": uploader.sent_sentences,
        "uploaded_bytes": uploader.sent_bytes,
        "host": ctx.host_id,
    }
