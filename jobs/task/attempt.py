"""What every job of a worker does in an attempt, whatever the job (a book, a part of one, a clip): record who runs
it, keep its stored inputs as long as it, ready its voices for the engine, synthesize what has no checkpoint
(checkpointing each sentence as it completes, with beats, stop and cancel checks between batches), keep the
checkpoints as a cache afterwards, and record a failure as one line. The book job (job.py), the part job (part.py)
and the clip job (clip.py) are made of these."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from typing import cast

import numpy as np
from narrate.jobs.book import cache
from narrate.jobs.book.checkpoints import CheckpointStore
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.book.synthesis import Sentence, VoiceEmbedding
from narrate.jobs.documents.voicing import NARRATOR
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.server import store
from narrate.jobs.settings import SAMPLE_RATE
from narrate.jobs.task.batch_log import BatchLog
from narrate.jobs.task.context import JobContext, StopRequested
from narrate.jobs.task.model_protocols import Engine
from narrate.jobs.task.progress import Progress, save_meta
from rq.job import Job

log = logging.getLogger("narrate.jobs")
Voices = VoiceEmbedding | dict[str, VoiceEmbedding]  # one voice, or a cast's by label
CANCEL_POLL_S = 1.0  # while a batch runs, how often the job asks whether it was canceled (one Redis round trip)


class SynthesisError(RuntimeError):
    """The engine failed; the message names the sentences that were in flight."""


def record_failure(job: Job, e: Exception) -> str:
    """The one-line error in the job's meta; a bad input is not retried. Returns the line."""
    said = str(e) if isinstance(e, NarrateError) else f"{type(e).__name__}: {e}"  # ours: already a sentence
    job.meta["error"] = said.splitlines()[0][:500]
    save_meta(job)
    if isinstance(e, BadInput | LookupError):  # a bad model, path or missing document: no retry
        job.retries_left = 0
    return cast(str, job.meta["error"])  # set above


def engine_voice(ctx: JobContext, engine: Engine, spec: JobSpec) -> Voices:
    """The job's voice (a cast's: every voice by label), ready for the engine (BadInput if this
    model cannot speak one: no retry, the message names the cast's voice); warnings (an instruction
    the model ignores) go into the job's meta and the worker's log."""
    if not spec.cast:
        found: dict[str, VoiceEmbedding] = {NARRATOR: engine.voice(ctx.job.connection, spec.voice_ref)}
    else:
        found = {}
        for label, ref in spec.voice_refs().items():
            try:
                found[label] = engine.voice(ctx.job.connection, ref)
            except BadInput as e:
                raise BadInput(f"the cast's voice {label!r}: {e}") from None
    warnings = list(dict.fromkeys(v.warning for v in found.values() if v.warning))
    if warnings:
        for w in warnings:
            log.warning("job %s: %s", ctx.job.id, w)
        ctx.job.meta["warnings"] = warnings
        save_meta(ctx.job)
    return found if spec.cast else found[NARRATOR]


def begin_attempt(ctx: JobContext) -> None:
    """Record who runs this attempt: a new worker on this host then knows the job is abandoned,
    and `resume` elsewhere knows how often this worker beats."""
    job = ctx.job
    job.meta["host"] = ctx.host_id
    job.meta["hostname"] = socket.gethostname()  # what people see (the host id is a hash)
    job.meta["heartbeat_s"] = ctx.settings.heartbeat_s
    job.meta["grace_s"] = ctx.settings.abandoned_grace_s
    job.meta["attempts"] = int(job.meta.get("attempts", 0)) + 1
    job.meta.pop("error", None)
    save_meta(job)


def settle_cache(ctx: JobContext, checkpoints: CheckpointStore, plan: Plan) -> None:
    """The output is in place: keep the checkpoints as a cache within its cap (or discard them)."""
    try:
        cache.after_job(checkpoints, plan.keys, cache.cap_bytes(ctx.settings.cache_max_gb))
    except OSError as e:  # the book is written: a cache that could not be trimmed is no failure
        log.warning("could not trim the sentence cache in %s: %s", checkpoints.root, e)


def keep_inputs(job: Job, spec: JobSpec) -> None:
    """Keep the stored document and voice as long as this job's status and result are kept."""
    keep_s = int(job.result_ttl or 0) + int(job.timeout or 0)
    if keep_s > 0:
        samples = [ref.sample for ref in spec.voice_refs().values() if ref.sample]
        store.keep(job.connection, spec.document, samples, keep_s)
        if spec.cover:
            job.connection.expire(store.cover_key(spec.cover), keep_s, gt=True)


def synthesize(
    ctx: JobContext,
    engine: Engine,
    voice: Voices,
    plan: Plan,
    todo: list[Sentence],
    checkpoints: CheckpointStore,
    progress: Progress,
    on_saved: Callable[[int], None] | None = None,
) -> float:
    """Run the engine over the missing sentences, checkpointing each as it completes (then told
    to `on_saved`). Returns the monotonic time of the first audio."""
    job = ctx.job
    progress.start_synthesis()
    batch_log = BatchLog(job.id, len(todo), progress)  # one INFO line per batch in the worker log

    def on_batch(indices: list[int]) -> None:
        """Called between batches: every earlier sentence is checkpointed by now."""
        batch_log.start(indices)  # logs the batch before
        try:
            ctx.check_stop(progress.done, progress.total)
        except StopRequested:
            progress.save()  # what is checkpointed, for `status` and `resume` (not once another worker has the job)
            raise
        job.meta["in_flight"] = indices  # named in the error if this batch kills the worker
        save_meta(job)
        ctx.beat()

    parts: dict[int, list] = {}
    first_audio = None
    asked = time.monotonic()
    rides = ctx.riders.open(engine)  # speech requests join the batches meanwhile (worker.process.clip_watch)
    chunks = engine.synthesize(
        todo,
        voice,
        on_batch,
        ctx.riders.take if rides else None,
        on_dropped=lambda c: batch_log.chunk(c.frames, c.pcm.size, c.index),
    )
    try:
        for chunk in chunks:
            ctx.beat()
            if ctx.cancel.is_set() or time.monotonic() - asked >= CANCEL_POLL_S:  # a cancel ends the batch in flight
                asked = time.monotonic()
                ctx.check_canceled(progress.done, progress.total)
            if first_audio is None:
                first_audio = time.monotonic()
            parts.setdefault(chunk.index, []).append(chunk)
            if not chunk.final:
                batch_log.chunk(chunk.frames, chunk.pcm.size, chunk.index)
                continue
            done = parts.pop(chunk.index)
            pcm = np.concatenate([c.pcm for c in done]) if done else np.zeros(0, dtype=np.float32)
            checkpoints.save(
                plan.keys[chunk.index],
                pcm,
                frames=sum(c.frames for c in done),
                runaway=chunk.runaway,
                takes=chunk.takes,
            )
            progress.sentence_done(pcm.size / SAMPLE_RATE, chunk.index)
            batch_log.chunk(chunk.frames, chunk.pcm.size, chunk.index, final=True)  # after: its line counts it done
            if on_saved is not None:
                on_saved(chunk.index)
        batch_log.finish()
    except StopRequested:
        progress.save()  # what is checkpointed, for `status` and `resume`
        raise
    except Exception as e:
        texts = {s.index: s.text for s in todo}
        names = "; ".join(f"{i} ({texts.get(i, '')[:80]!r})" for i in job.meta.get("in_flight", []))
        raise SynthesisError(f"synthesis failed on sentence(s) {names}: {type(e).__name__}: {e}") from e
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()  # a cancel mid-batch: the engine drops the rows in flight (its riders go back)
        ctx.riders.close()
    return first_audio if first_audio is not None else time.monotonic()
