"""The clip job: one line spoken in one voice, once per seed (`narrate voice preview`: one clip;
`narrate voice design`: N candidates of a description, in one batch). Each clip is stored in Redis
as a WAV (jobs.voices.clips) for the host that asked, whichever host made it; nothing is written to
the output root. A clip is seconds of audio: no checkpoints, a retry makes it again."""

from __future__ import annotations

import logging

import numpy as np
from narrate.jobs.audio.voices import wav_bytes
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.documents.budgets import frame_budget
from narrate.jobs.documents.languages import tts_name
from narrate.jobs.documents.normalize import Normalizer
from narrate.jobs.settings import SAMPLE_RATE
from narrate.jobs.task.context import JobContext, StopRequested
from narrate.jobs.task.job import _begin_attempt, record_failure
from narrate.jobs.task.progress import Progress, save_meta
from narrate.jobs.voices.clips import ClipSpec, put_clip

log = logging.getLogger("narrate.jobs")


def clip_job(ctx: JobContext, spec_json: dict) -> dict:
    try:
        return _clip(ctx, ClipSpec.from_json(spec_json))
    except StopRequested:
        raise
    except Exception as e:
        record_failure(ctx.job, e)
        raise


def _clip(ctx: JobContext, spec: ClipSpec) -> dict:
    job = ctx.job
    r = job.connection
    _begin_attempt(ctx)
    engine = ctx.engine_for(spec.model, spec.quant)
    job.meta["model"] = f"{engine.source} ({engine.quant})"
    voice = engine.voice(r, spec.ref)
    if voice.warning:
        log.warning("job %s: %s", job.id, voice.warning)
        job.meta["warnings"] = [voice.warning]
    spoken = Normalizer(spec.language)(spec.text)
    budget = frame_budget(spoken, spec.max_frames)
    language = tts_name(spec.language)
    sentences = [Sentence(i, spoken, seed, budget, language) for i, seed in enumerate(spec.seeds)]
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
        pcm16 = (np.clip(pcm, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        number = chunk.index + 1
        put_clip(r, job.id, number, wav_bytes(pcm16), spec.keep_s)
        clips.append({"number": number, "seed": spec.seeds[chunk.index], "seconds": round(pcm.size / SAMPLE_RATE, 3),
                      "runaway": chunk.runaway})  # fmt: skip
        progress.sentence_done(pcm.size / SAMPLE_RATE)
    progress.save()
    save_meta(job)
    return {
        "clips": sorted(clips, key=lambda c: c["number"]),
        "text": spec.text,
        "voice": spec.ref.describe(),
        "model": engine.source,
        "quant": engine.quant,
        "warnings": job.meta.get("warnings", []),
    }
