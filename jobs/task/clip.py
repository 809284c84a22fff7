"""The clip job: one line spoken in one voice, once per seed (`narrate voice preview`: one clip;
`narrate voice design`: N candidates of a description, in one batch). Each clip is stored in Redis
as a WAV (jobs.voices.clips) for the host that asked, whichever host made it; nothing is written to
the output root. A clip is seconds of audio: no checkpoints, a retry makes it again.

A clip job waiting while its host's worker narrates a book rides along the book's batches
(``ClipRider``, a jobs.book.synthesis.Rider): the same sentences, seeds and clips as on its own."""

from __future__ import annotations

import logging
import time

import numpy as np
import redis
from narrate.jobs.audio.samples import wav_bytes
from narrate.jobs.book.synthesis import Chunk, Sentence, VoiceEmbedding
from narrate.jobs.documents.budgets import frame_budget
from narrate.jobs.documents.languages import tts_name
from narrate.jobs.documents.normalize import Normalizer
from narrate.jobs.queue import riding
from narrate.jobs.settings import SAMPLE_RATE
from narrate.jobs.task.attempt import begin_attempt, record_failure
from narrate.jobs.task.context import JobContext, StopRequested
from narrate.jobs.task.model_protocols import Engine
from narrate.jobs.task.progress import Progress, save_meta
from narrate.jobs.voices.clips import ClipSpec, put_clip, put_piece
from rq.job import Job

log = logging.getLogger("narrate.jobs")


def clip_job(ctx: JobContext, spec_json: dict) -> dict:
    try:
        return _clip(ctx, ClipSpec.from_json(spec_json))
    except StopRequested:
        raise
    except Exception as e:
        record_failure(ctx.job, e)
        raise


def sentences_of(spec: ClipSpec) -> list[Sentence]:
    """The clip's line once per seed, numbered from 0."""
    spoken = Normalizer(spec.language)(spec.text)
    budget = frame_budget(spoken, spec.max_frames)
    language = tts_name(spec.language)
    return [Sentence(i, spoken, seed, budget, language) for i, seed in enumerate(spec.seeds)]


def store(r: redis.Redis, job_id: str, spec: ClipSpec, index: int, pcm: np.ndarray, runaway: bool) -> dict:
    """Clip `index` + 1 into Redis as a WAV; what the job's result says of it."""
    put_clip(r, job_id, index + 1, wav_bytes(pcm16(pcm)), spec.keep_s)
    return {
        "number": index + 1,
        "seed": spec.seeds[index],
        "seconds": round(pcm.size / SAMPLE_RATE, 3),
        "runaway": runaway,
    }


def pcm16(pcm: np.ndarray) -> bytes:
    return bytes((np.clip(pcm, -1.0, 1.0) * 32767).astype("<i2").tobytes())


def result_of(spec: ClipSpec, clips: list[dict], engine: Engine, warnings: list[str]) -> dict:
    return {
        "clips": sorted(clips, key=lambda c: c["number"]),
        "text": spec.text,
        "voice": spec.ref.describe(),
        "model": engine.source,
        "quant": engine.quant,
        "warnings": warnings,
    }


def _clip(ctx: JobContext, spec: ClipSpec) -> dict:
    job = ctx.job
    r = job.connection
    begin_attempt(ctx)
    engine = ctx.engine_for(spec.model, spec.quant)
    job.meta["model"] = f"{engine.source} ({engine.quant})"
    voice = engine.voice(r, spec.ref)
    if voice.warning:
        log.warning("job %s: %s", job.id, voice.warning)
        job.meta["warnings"] = [voice.warning]
    sentences = sentences_of(spec)
    progress = Progress(job, len(sentences), listener=ctx.on_progress)
    progress.start_synthesis()
    progress.save()
    pieces: dict[int, list[np.ndarray]] = {}
    clips = []

    def on_batch(_indices: list[int]) -> None:
        ctx.check_stop(progress.done, progress.total)
        ctx.beat()

    for chunk in engine.synthesize(sentences, voice, on_batch):
        ctx.beat()
        pieces.setdefault(chunk.index, []).append(chunk.pcm)
        if not chunk.final:
            continue
        pcm = np.concatenate(pieces.pop(chunk.index))
        clips.append(store(r, job.id, spec, chunk.index, pcm, chunk.runaway))
        progress.sentence_done(pcm.size / SAMPLE_RATE)
    progress.save()
    save_meta(job)
    return result_of(spec, clips, engine, job.meta.get("warnings", []))


class ClipRider:
    """A clip job taken (jobs.queue.riding.take) by the worker of a running book, riding along it."""

    def __init__(self, job: Job, spec: ClipSpec, book_id: str, worker_name: str, host_id: str, refused: set[str]):
        self.job, self.spec, self.book_id = job, spec, book_id
        self.refused = refused  # given back, it is not taken along again: it runs on its own
        self.worker_name, self.host_id = worker_name, host_id
        self.r = job.connection
        self.sentences = sentences_of(spec)
        self.engine: Engine | None = None
        self.warnings: list[str] = []
        self.pieces: dict[int, list[np.ndarray]] = {}
        self.streamed: dict[int, int] = {}  # bytes of each clip streamed so far (this take's)
        self.clips: list[dict] = []
        self.taken = time.monotonic()
        self.ended = False

    def voice(self, engine: Engine) -> VoiceEmbedding:
        self.engine = engine
        voice = engine.voice(self.r, self.spec.ref)
        self.warnings = [voice.warning] if voice.warning else []
        return voice

    def chunk(self, chunk: Chunk) -> None:
        """Each piece of audio streamed at once to the speech request waiting for it (``put_piece``: one
        XADD, nothing when no request waits), the clip stored whole at its end."""
        self.pieces.setdefault(chunk.index, []).append(chunk.pcm)
        if chunk.pcm.size:
            piece = pcm16(chunk.pcm)
            at = self.streamed.get(chunk.index, 0)
            put_piece(self.r, self.job.id, chunk.index + 1, at, piece)
            self.streamed[chunk.index] = at + len(piece)
        if not chunk.final:
            return
        pcm = np.concatenate(self.pieces.pop(chunk.index))
        self.clips.append(store(self.r, self.job.id, self.spec, chunk.index, pcm, chunk.runaway))
        if len(self.clips) == len(self.sentences):
            self._finish()

    def _finish(self) -> None:
        assert self.engine is not None  # its voice was made for the engine it rode with
        job = self.job
        job.meta.update({"model": f"{self.engine.source} ({self.engine.quant})", "rode_with": self.book_id})
        if self.warnings:
            job.meta["warnings"] = self.warnings
        done = riding.finish(
            self.r, job, result_of(self.spec, self.clips, self.engine, self.warnings), self.worker_name, self.host_id
        )
        self.ended = True
        took = time.monotonic() - self.taken
        if done:
            log.info("clip job %s spoken along job %s in %.2f s", job.id, self.book_id, took)
        else:
            log.info("clip job %s was canceled or deleted while it rode along job %s", job.id, self.book_id)

    def give_back(self, why: str) -> None:
        if self.ended:
            return
        self.ended = True
        self.refused.add(self.job.id)
        riding.give_back(self.r, self.job, self.host_id)
        log.info("clip job %s back to its queue: %s", self.job.id, why)
