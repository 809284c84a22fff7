"""The narration job function: document + voice -> one audio file, in four steps:
plan (jobs.book.plan) -> synthesize what has no checkpoint -> stitch from the checkpoints -> result.

Crash safety: every finished sentence is checkpointed (jobs.book.checkpoints) before it counts as done,
so a retried, requeued or resubmitted job synthesizes only what is missing; the output is stitched
from the checkpoints, encoded to a temp file and renamed. The checkpoints then stay as a cache
(jobs.book.cache); one evicted between planning and stitching is synthesized again while stitching.
The worker calls ``narrate_job`` with a JobContext (jobs.task.context); a stop request ends the job
between batches and the worker requeues it; a cancel (or a deleted job record) ends it between
batches for good, and is checked once more right before the output is put in place, so a canceled
job writes no output.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from narrate.jobs.book.checkpoints import Checkpoint, CheckpointStore
from narrate.jobs.book.plan import Plan, make_plan
from narrate.jobs.book.result import JobResult, Timings
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.selection import spans
from narrate.jobs.errors import NarrateError
from narrate.jobs.fanout import partaudio
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.library.deliver import Abs, deliver
from narrate.jobs.library.export import info_of
from narrate.jobs.outputs.outputs import OutputRoot, output_path
from narrate.jobs.server import store
from narrate.jobs.settings import SAMPLE_RATE
from narrate.jobs.task.attempt import (
    Voices,
    begin_attempt,
    engine_voice,
    keep_inputs,
    record_failure,
    settle_cache,
    synthesize,
)
from narrate.jobs.task.context import JobContext, StopRequested
from narrate.jobs.task.model_protocols import Engine
from narrate.jobs.task.progress import Progress
from narrate.jobs.task.proof_pass import ProofPass
from narrate.jobs.task.stitcher import Stitched, Stitcher
from narrate.jobs.task.superseding import REDO_OF, take_over
from narrate.jobs.task.word_timings import WordTimings

log = logging.getLogger("narrate.jobs")


def preload() -> None:
    """Import now what a job loads on first use (assembly and loudness filters, pydub, tagging,
    number words), so a worker's memory is flat from its first job on and that job starts sooner.
    Submitting clients never call this: they stay light."""
    import mutagen.flac  # noqa: F401
    import mutagen.id3  # noqa: F401
    import mutagen.mp4  # noqa: F401
    import num2words  # noqa: F401
    from narrate.jobs.documents.normalize import en as normalize_en  # noqa: F401


class CheckpointVanished(RuntimeError):
    """A sentence's checkpoint was removed again right after it was synthesized a second time."""


def narrate_job(ctx: JobContext, spec_json: dict, fanout: dict | None = None) -> dict:
    """The book's job. With `fanout` ({"parts": [part job ids]}: jobs.fanout.split) it runs once all its
    parts have finished: their audio comes from Redis into this host's checkpoints first, then it
    is the same job as on one host (what no part covered, or what did not arrive, it synthesizes)."""
    try:
        spec = JobSpec.from_json(spec_json)
        data = _narrate(ctx, spec, fanout is not None).to_json()
        if redone := (ctx.job.meta or {}).get(REDO_OF):  # a redo: its files are in place, it takes the old job's
            take_over(ctx.job.connection, ctx.job.id, redone)
    except StopRequested:
        raise
    except Exception as e:
        record_failure(ctx.job, e)
        raise
    if spec.library or spec.abs_url:
        data["library"] = _to_library(ctx, spec, data)
    return data


def _to_library(ctx: JobContext, spec: JobSpec, data: dict) -> dict:
    """The book exported into the job's library (`--library`); a failure is reported in the result
    (the book stays where it was written, `narrate export` tries again), never fails the job."""
    r = ctx.job.connection
    try:
        doc = None
        with contextlib.suppress(LookupError):
            doc = store.get_document(r, spec.document)
        found = info_of(r, ctx.settings.output_dir, ctx.job.id, spec, doc, data, (ctx.job.meta or {}).get("voice_name"))
        server = Abs(spec.abs_url, ctx.settings.abs_token, ctx.settings.abs_library) if spec.abs_url else None
        library = Path(spec.library) if spec.library else None
        done, told = deliver(
            found, library, spec.library_layout, server, ctx.settings.home, replaces=(ctx.job.meta or {}).get(REDO_OF)
        )
        return {
            "folder": str(done.folder) if done else None,
            "note": done.note if done else None,
            "audiobookshelf": told,
        }
    except (NarrateError, OSError) as e:
        log.warning("job %s: the export to %s failed: %s", ctx.job.id, spec.library or spec.abs_url, e)
        return {"error": f"{e}; the book stays at {data['output']} (narrate export {ctx.job.id} tries again)"}


def _narrate(ctx: JobContext, spec: JobSpec, fanned_out: bool = False) -> JobResult:
    """One attempt at the book: planned, its missing takes synthesized and passed along the take stages, the book
    stitched, the cache settled, the result."""
    book = _Attempt.begin(ctx, spec, fanned_out)
    stitched = book.synthesize_and_stitch()
    settle_cache(ctx, book.checkpoints, book.plan)
    if fanned_out:
        partaudio.delete(ctx.job.connection, ctx.job.id)  # the book is written: its parts' audio is not needed
    book.progress.save()
    keep_inputs(ctx.job, spec)
    return book.result(stitched)


@dataclass
class _Attempt:
    """One attempt at a book, as planning found it: what is checkpointed already and what is to synthesize."""

    ctx: JobContext
    spec: JobSpec
    doc: Document
    root: OutputRoot
    final: Path  # where the book lands (under the pinned root)
    engine: Engine
    plan: Plan
    checkpoints: CheckpointStore
    cached: dict[int, int]  # sentence -> samples, checkpointed before this attempt
    todo: list[Sentence]
    progress: Progress
    t0: float
    t_loaded: float
    proofing: ProofPass | None = None  # --proof (jobs/task/proof_pass.py)
    wording: WordTimings | None = None  # --word-timings (jobs/task/word_timings.py)
    voices: list[Voices] = field(default_factory=list)  # the job's voice, once made
    first_audio: float | None = None

    @classmethod
    def begin(cls, ctx: JobContext, spec: JobSpec, fanned_out: bool) -> _Attempt:
        job = ctx.job
        begin_attempt(ctx)
        keep_inputs(job, spec)
        doc = store.get_document(job.connection, spec.document)
        root = OutputRoot.pin(ctx.settings.output_dir)  # the book may only land in this very directory
        final = output_path(root.path, spec.output)
        t0 = time.monotonic()
        engine = ctx.engine_for(spec.model, spec.quant)
        t_loaded = time.monotonic()
        job.meta["model"] = f"{engine.source} ({engine.quant})"
        plan = make_plan(doc, spec, engine.model_key, engine.quant)
        checkpoints = CheckpointStore(ctx.settings.home / "checkpoints")
        if fanned_out:  # the parts' audio, synthesized on any host
            partaudio.download(job.connection, job.id, checkpoints, ffmpeg_exe(ctx.settings.ffmpeg))
        cached = plan.checkpointed(checkpoints)
        todo = [s for s in plan.sentences if s.index not in cached]
        proofing = ProofPass.open(ctx, spec, plan, checkpoints) if spec.proof else None
        wording = WordTimings.open(ctx, spec, plan, checkpoints) if spec.word_timings else None
        progress = Progress(
            job,
            len(plan.sentences),
            done=len(plan.sentences) - len(todo),
            listener=ctx.on_progress,
            audio_seconds=sum(cached.values()) / SAMPLE_RATE,
            chapters=spans(sorted(plan.chapter_at.items()), len(plan.sentences), doc.title),
            done_indices=set(cached),
        )
        progress.save()
        ctx.check_canceled(progress.done, progress.total)  # canceled while it was being taken from the queue
        found = (doc, root, final, engine, plan, checkpoints, cached, todo, progress)
        return cls(ctx, spec, *found, t0, t_loaded, proofing, wording)

    def voice(self) -> Voices:
        if not self.voices:
            self.voices.append(engine_voice(self.ctx, self.engine, self.spec))
        return self.voices[0]

    def synthesize_and_stitch(self) -> Stitched:
        """The take stages, in order: each synthesized take goes to the proof pass (with --proof), which passes on
        the takes it makes final; each final take goes to word timings (with --word-timings) and to the stitcher,
        which may encode it into the book at once."""
        to_hear = self.proofing.to_hear(self.cached) if self.proofing else []  # checkpointed, not heard to the end
        words = self.wording.collect if self.wording else None
        stitching = Stitcher(
            self.ctx,
            self.spec,
            self.doc,
            self.plan,
            self.checkpoints,
            self.root,
            self.final,
            self.todo + to_hear,
            words,
        )
        stages = [stage for stage in (self.proofing, self.wording) if stage is not None]
        with stitching as stitcher, contextlib.ExitStack() as running:
            for stage in stages:
                running.enter_context(stage)
            receivers = [stitcher.saved]
            if self.wording:  # a sentence's words are aligned once its take is final
                self.wording.start(i for i in self.cached if i not in {s.index for s in to_hear})
                receivers.append(self.wording.saved)
            taken = _each(receivers)
            if self.proofing:  # a sentence goes on once its proof is final
                self.proofing.start(taken, to_hear, bool(self.todo))
                taken = self.proofing.heard
            if self.todo:
                self.first_audio = synthesize(
                    self.ctx, self.engine, self.voice(), self.plan, self.todo, self.checkpoints, self.progress, taken
                )
            if self.proofing:
                self.proofing.settle(lambda retakes, on_batch: self.engine.synthesize(retakes, self.voice(), on_batch))
            return stitcher.finish(self.again)

    def again(self, s: Sentence) -> Checkpoint:
        """Its checkpoint vanished after planning (evicted by another job, or `narrate cache prune`)."""
        self.progress.done -= 1  # counted at planning; counted again once synthesized
        self.progress.audio_seconds -= self.cached.pop(s.index, 0) / SAMPLE_RATE
        synthesize(self.ctx, self.engine, self.voice(), self.plan, [s], self.checkpoints, self.progress)
        cp = self.checkpoints.load(self.plan.keys[s.index])
        if cp is None:
            raise CheckpointVanished(
                f"the checkpoint of sentence {s.index} was removed again as soon as it was synthesized "
                f"(is `narrate cache prune` running?); `narrate resume {self.ctx.job.id}` continues the job"
            )
        return cp

    def result(self, book: Stitched) -> JobResult:
        voice_cache, encoder_runs = "unused", 0
        if self.voices:
            every = list(self.voices[0].values()) if isinstance(self.voices[0], dict) else [self.voices[0]]
            voice_cache = "hit" if all(v.cache_hit for v in every) else "miss"
            encoder_runs = sum(v.encoder_runs for v in every)
        wall = time.monotonic() - self.t0
        duration = book.samples / SAMPLE_RATE
        sentences = len(self.plan.sentences)
        return JobResult(
            output=str(self.final),
            output_relative=self.spec.output,
            output_sha256=book.sha256,
            duration_seconds=duration,
            samples=book.samples,
            sentences=sentences,
            paragraphs=len(self.doc.paragraphs),
            chapters=book.chapters,
            synthesized=self.progress.synthesized,
            reused=sentences - self.progress.synthesized,
            frames=book.frames,
            runaway_sentences=book.runaways,
            retried_sentences=book.retried,
            model=self.engine.source,
            quant=self.engine.quant,
            voice_cache=voice_cache,
            speaker_encoder_runs=encoder_runs,
            attempts=int(self.ctx.job.meta["attempts"]),
            timings=Timings(
                wall_s=round(wall, 3),
                model_s=round(self.t_loaded - self.t0, 3),
                first_audio_s=round(self.first_audio - self.t0, 3) if self.first_audio is not None else 0.0,
                realtime_factor=round(duration / wall, 3) if wall > 0 else None,
                stitch_tail_s=book.tail_s,
            ),
            segments=book.segments,
            segments_encoded_early=book.encoded_early,
            voices=_per_voice(self.plan, self.checkpoints) if self.spec.cast else None,
            proof=self.proofing.summary(book.cues, book.chapters) if self.proofing else None,
            word_timings=self.wording.summary(book.words) if self.wording else None,
        )


def _each(receivers: Sequence[Callable[[int], None]]) -> Callable[[int], None]:
    """One receiver of final takes that hands each to every one of `receivers`, in order."""
    if len(receivers) == 1:
        return receivers[0]

    def told(index: int) -> None:
        for receiver in receivers:
            receiver(index)

    return told


def _per_voice(plan: Plan, checkpoints: CheckpointStore) -> dict[str, dict]:
    """Sentences and seconds of audio (pauses not counted) read by each voice of a cast."""
    samples = plan.checkpointed(checkpoints)
    out: dict[str, dict] = {}
    for s in plan.sentences:
        row = out.setdefault(s.voice, {"sentences": 0, "seconds": 0.0})
        row["sentences"] += 1
        row["seconds"] = round(row["seconds"] + samples.get(s.index, 0) / SAMPLE_RATE, 3)
    return out
