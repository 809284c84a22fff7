"""The narration job function RQ runs on a worker: document + voice -> one audio file."""

from __future__ import annotations

import time

from rq import get_current_job

from . import store
from .ffmpeg import ffmpeg_exe
from .outputs import output_path
from .progress import Progress
from .settings import SAMPLE_RATE
from .spec import JobSpec, frame_budget, sentence_seed


def narrate_job(spec_json: dict) -> dict:
    job = get_current_job()
    try:
        return _narrate(job, JobSpec.from_json(spec_json))
    except Exception as e:
        if job is not None:
            job.meta["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:500]
            job.save_meta()
        raise


def _narrate(job, spec: JobSpec) -> dict:
    # The MLX side is imported only here, on the worker, never by submitting clients.
    from narrate.worker.engine import Sentence
    from narrate.worker.lock import host_lock
    from narrate.worker.models import SpeakerEncoderRuns
    from narrate.worker.runtime import get_runtime
    from narrate.worker.voice_cache import voice_embedding

    from .stitch import BookWriter, to_segment

    rt = get_runtime()
    settings = rt.settings
    r = job.connection
    doc = store.get_document(r, spec.document)
    final = output_path(settings.output_dir, spec.output)
    sentences: list[Sentence] = []
    paragraph_end: set[int] = set()
    for para in doc.paragraphs:
        for text in para:
            sentences.append(
                Sentence(
                    len(sentences), text, sentence_seed(spec.seed, text), frame_budget(text, spec.max_frames)
                )
            )
        paragraph_end.add(len(sentences) - 1)
    progress = Progress(job, len(sentences))
    frames = [0] * len(sentences)
    runaways: list[int] = []
    retried: list[int] = []
    t0 = time.monotonic()
    with host_lock(settings.lock_path):
        engine = rt.engine(spec.model, spec.quant)
        t_loaded = time.monotonic()
        enc_before = SpeakerEncoderRuns.count
        embedding, cache_hit = voice_embedding(r, engine.loaded, spec.voice)
        encoder_runs = SpeakerEncoderRuns.count - enc_before
        first_audio_s = None
        with BookWriter(final, ffmpeg_exe(settings.ffmpeg), title=doc.title) as book:
            pending: dict[int, list] = {}  # out-of-order chunks (batched synthesis)
            next_index = 0
            for chunk in engine.synthesize(sentences, embedding):
                if first_audio_s is None:
                    first_audio_s = time.monotonic() - t0
                pending.setdefault(chunk.index, []).append(chunk)
                frames[chunk.index] += chunk.frames
                if chunk.final and chunk.runaway:
                    runaways.append(chunk.index)
                if chunk.final and chunk.attempts > 1:
                    retried.append(chunk.index)
                # Write every sentence that is complete and next in reading order.
                while next_index in pending and pending[next_index][-1].final:
                    parts = pending.pop(next_index)
                    for part in parts:
                        book.add(to_segment(part.pcm))
                    if next_index < len(sentences) - 1:
                        book.pause(
                            spec.paragraph_pause_ms if next_index in paragraph_end else spec.sentence_pause_ms
                        )
                    progress.sentence_done(sum(p.pcm.size for p in parts) / SAMPLE_RATE)
                    next_index += 1
            if next_index != len(sentences):
                raise RuntimeError(f"synthesis ended after {next_index} of {len(sentences)} sentences")
            book.finish()
            samples = book.samples
    progress.save()
    wall = time.monotonic() - t0
    return {
        "output": str(final),
        "output_relative": spec.output,
        "duration_seconds": samples / SAMPLE_RATE,
        "samples": samples,
        "sentences": len(sentences),
        "paragraphs": len(doc.paragraphs),
        "frames": frames,
        "runaway_sentences": sorted(runaways),  # used the whole frame budget (after retries)
        "retried_sentences": sorted(retried),  # were runaways once and synthesized again
        "model": engine.loaded.resolved.source,
        "quant": engine.loaded.resolved.quant,
        "voice_cache": "hit" if cache_hit else "miss",
        "speaker_encoder_runs": encoder_runs,
        "timings": {
            "wall_s": round(wall, 3),
            "model_s": round(t_loaded - t0, 3),
            "first_audio_s": round(first_audio_s or 0.0, 3),
            "realtime_factor": round(samples / SAMPLE_RATE / wall, 3) if wall > 0 else None,
        },
    }
