"""The narration job function RQ runs on a worker: document + voice -> one audio file.

Crash safety: every finished sentence is checkpointed (jobs/checkpoints.py) before it counts as
done, so a retried, requeued or resubmitted job synthesizes only what is missing; the output
is stitched from the checkpoints, encoded to a temp file and renamed. A warm stop request
ends the job between batches and the worker requeues it.
"""

from __future__ import annotations

import logging
import time
from itertools import accumulate

import redis
from rq import get_current_job

from . import store
from .checkpoints import CheckpointStore, checkpoint_key
from .errors import BadInput
from .ffmpeg import ffmpeg_exe
from .outputs import output_path
from .progress import Progress
from .settings import SAMPLE_RATE
from .spec import JobSpec, frame_budget, sentence_seed

log = logging.getLogger("narrate.jobs")


class StopRequested(Exception):
    """The worker was asked to stop: the job ends between batches and is requeued."""


def narrate_job(spec_json: dict) -> dict:
    job = get_current_job()
    try:
        return _narrate(job, JobSpec.from_json(spec_json))
    except StopRequested:
        raise
    except Exception as e:
        if job is not None:
            job.meta["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:500]
            save_meta(job)
            if isinstance(e, BadInput | LookupError):  # a bad model, path or missing document: no retry
                job.retries_left = 0
        raise


def save_meta(job) -> None:
    """Job meta is best effort: a Redis outage must not fail the synthesis it describes."""
    try:
        job.save_meta()
    except redis.RedisError as e:
        log.warning("could not save progress of job %s: %s", job.id, e)


def _narrate(job, spec: JobSpec) -> dict:
    # The MLX side is imported only here, on the worker, never by submitting clients.
    from narrate.worker.runtime import get_runtime

    from .stitch import BookWriter, int16_segment
    from .synthesis import Sentence

    rt = get_runtime()
    settings = rt.settings
    r = job.connection
    job.meta["host"] = rt.host_id  # a new worker on this host knows this job is abandoned
    job.meta["attempts"] = int(job.meta.get("attempts", 0)) + 1
    job.meta.pop("error", None)
    save_meta(job)
    doc = store.get_document(r, spec.document)
    final = output_path(settings.output_dir, spec.output)
    sentences: list[Sentence] = []
    paragraph_end: set[int] = set()
    for para in doc.paragraphs:
        for text in para:
            i = len(sentences)
            sentences.append(Sentence(i, text, sentence_seed(spec.seed, text), frame_budget(text, spec.max_frames)))
        paragraph_end.add(len(sentences) - 1)
    t0 = time.monotonic()
    engine = rt.engine(spec.model, spec.quant)
    t_loaded = time.monotonic()
    segments = CheckpointStore(settings.home / "checkpoints")
    keys = [checkpoint_key(s.text, spec.voice, engine.model_key, engine.quant, s.seed, s.budget) for s in sentences]
    todo = [s for s in sentences if not segments.verify(keys[s.index])]  # body checksums too
    progress = Progress(job, len(sentences), done=len(sentences) - len(todo), save=save_meta)
    progress.save()
    cache, encoder_runs, first_audio_s = "unused", 0, None
    if todo:
        embedding = engine.voice(r, spec.voice)
        cache, encoder_runs = ("hit" if embedding.cache_hit else "miss"), embedding.encoder_runs

        def on_batch(indices: list[int]) -> None:
            """Called between batches: every earlier sentence is checkpointed by now."""
            if rt.stop_requested:  # a warm stop: end here, the worker requeues the job
                progress.save()
                rt.requeue_current = True
                raise StopRequested(f"stopped after {progress.done} of {progress.total} sentences")
            job.meta["in_flight"] = indices  # named in the error if this batch kills the worker
            save_meta(job)
            rt.beat()

        try:
            first_audio_s = _synthesize(engine, todo, embedding, on_batch, segments, keys, progress, rt) - t0
        except StopRequested:
            raise
        except Exception as e:
            names = "; ".join(f"{i} ({sentences[i].text[:80]!r})" for i in job.meta.get("in_flight", []))
            raise SynthesisError(f"synthesis failed on sentence(s) {names}: {type(e).__name__}: {e}") from e
    frames, runaways, retried = [], [], []
    first_of_paragraph = [0, *accumulate(len(p) for p in doc.paragraphs)]
    chapter_at = {first_of_paragraph[p]: title for p, title in doc.chapters}  # sentence index -> title
    with BookWriter(final, ffmpeg_exe(settings.ffmpeg), title=doc.title) as book:
        for s in sentences:
            if s.index in chapter_at:
                book.mark_chapter(chapter_at[s.index])
            seg = segments.load(keys[s.index])
            if seg is None:
                raise RuntimeError(f"sentence {s.index} has no checkpoint after synthesis")
            book.add(int16_segment(seg.pcm))
            if s.index < len(sentences) - 1:
                book.pause(spec.paragraph_pause_ms if s.index in paragraph_end else spec.sentence_pause_ms)
            frames.append(seg.frames)
            if seg.runaway:
                runaways.append(s.index)
            if seg.attempts > 1:
                retried.append(s.index)
        book.finish()
        samples = book.samples
        chapters = [{"title": t, "start_seconds": a / SAMPLE_RATE} for a, _, t in book.chapter_spans()]
    segments.discard(keys)
    progress.save()
    wall = time.monotonic() - t0
    return {
        "output": str(final),
        "output_relative": spec.output,
        "duration_seconds": samples / SAMPLE_RATE,
        "samples": samples,
        "sentences": len(sentences),
        "paragraphs": len(doc.paragraphs),
        "chapters": chapters,
        "synthesized": len(todo),  # the rest came from checkpoints of an earlier attempt
        "frames": frames,
        "runaway_sentences": runaways,  # used the whole frame budget (after retries)
        "retried_sentences": retried,  # were runaways once and synthesized again
        "model": engine.source,
        "quant": engine.quant,
        "voice_cache": cache,
        "speaker_encoder_runs": encoder_runs,
        "attempts": job.meta["attempts"],
        "timings": {
            "wall_s": round(wall, 3),
            "model_s": round(t_loaded - t0, 3),
            "first_audio_s": round(first_audio_s or 0.0, 3),
            "realtime_factor": round(samples / SAMPLE_RATE / wall, 3) if wall > 0 else None,
        },
    }


class SynthesisError(RuntimeError):
    """The engine failed; the message names the sentences that were in flight."""


def _synthesize(engine, todo, embedding, on_batch, segments: CheckpointStore, keys, progress: Progress, rt) -> float:
    """Run the engine over the missing sentences, checkpointing each as it completes.
    Returns the monotonic time of the first audio."""
    parts: dict[int, list] = {}
    first_audio = None
    for chunk in engine.synthesize(todo, embedding, on_batch):
        rt.beat()
        if first_audio is None:
            first_audio = time.monotonic()
        parts.setdefault(chunk.index, []).append(chunk)
        if not chunk.final:
            continue
        done = parts.pop(chunk.index)
        segments.save(
            keys[chunk.index],
            _concat([c.pcm for c in done]),
            frames=sum(c.frames for c in done),
            runaway=chunk.runaway,
            attempts=chunk.attempts,
        )
        progress.sentence_done(sum(c.pcm.size for c in done) / SAMPLE_RATE)
    return first_audio if first_audio is not None else time.monotonic()


def _concat(pcms: list):
    import numpy as np

    return np.concatenate(pcms) if pcms else np.zeros(0, dtype=np.float32)
