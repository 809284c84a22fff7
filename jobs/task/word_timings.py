"""Word timings of a job (``--word-timings``, docs/readalong.md): each sentence's words aligned with its take by a
forced aligner (jobs/readalong/aligning.py; the worker's is mlx-audio's Qwen3-ForcedAligner) beside synthesis,
kept in the sentence's checkpoint header, and handed to the read-along files (the EPUB's word-level overlays, the
word-level WebVTT) when the book is stitched.

Threads: the job thread tells ``saved`` each sentence whose take is final (after its proof, with ``--proof``) and
goes on; the words thread aligns what has queued up (up to BATCH takes; the worker's aligner runs on the MLX thread
it shares with the proof pass's recognizer, not on the decode loop) and writes each sentence's words, with the
sha256 of the take they are of, into its checkpoint header. A sentence whose header has its words for this aligner
and this take (an earlier attempt, another job reading the same sentence) is not aligned again.

``collect``, right before the read-along files are written, waits for what is queued, aligns what is still missing
(a take synthesized again while stitching) and returns every sentence's words. A sentence the aligner gave nothing
usable for (no words, times outside the take, every word at one instant: ``aligning.check_words``) is read along
sentence by sentence, and the log says which; only an aligner that cannot be loaded fails the job."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable

from narrate.jobs.book.checkpoints import CheckpointStore
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.readalong.aligning import align_model, check_words, from_record, record
from narrate.jobs.readalong.timing import Word
from narrate.jobs.settings import SAMPLE_RATE
from narrate.jobs.task.context import JobContext
from narrate.jobs.task.model_protocols import Aligner
from narrate.jobs.task.take_stage import TakeStage

log = logging.getLogger("narrate.jobs")
SHOWN = 10  # sentences named in the log line of those read along sentence by sentence


class WordTimings(TakeStage[int]):
    """A sentence's index queued once its take is final; batches of up to 8 aligned in one call."""

    NAME, FAILED = "narrate-word-timings", "word timings failed"

    def __init__(self, ctx: JobContext, plan: Plan, checkpoints: CheckpointStore, model: str):
        super().__init__(ctx, len(plan.sentences))
        self.plan, self.checkpoints, self.model = plan, checkpoints, model
        self._aligner: Aligner | None = None
        self._results: dict[int, tuple[str, list[Word], str | None]] = {}  # this attempt's: (take sha256, words, why)
        self.aligned = 0  # sentences this attempt aligned

    @classmethod
    def open(cls, ctx: JobContext, spec: JobSpec, plan: Plan, checkpoints: CheckpointStore) -> WordTimings:
        assert spec.word_timings is not None
        if ctx.aligner_for is None:
            raise BadInput("this worker cannot find word timings (it has no forced aligner)")
        return cls(ctx, plan, checkpoints, align_model(spec.word_timings, ctx.settings.align_model))

    def start(self, final: Iterable[int]) -> None:
        """Queue the sentences checkpointed before this attempt whose takes are final (`final`) and whose words are
        not in their checkpoints yet: they are aligned while the rest is synthesized."""
        for i in final:
            if self._kept(i) is None:
                self._put(i)

    def saved(self, index: int) -> None:
        """A sentence's take is final (the job thread): queue it; raise the words thread's error."""
        self._put(index)
        self._raise()

    def collect(self) -> dict[int, list[Word]]:
        """Every sentence's words (the job thread, once every take is final and checkpointed): what is queued is
        aligned first, then what is still missing (twice at most: a take that changes again meanwhile is read
        along sentence by sentence). A sentence without usable words is left out."""
        self._wait()
        found: dict[int, list[Word] | None] = {i: self._kept(i) for i in range(len(self.plan.sentences))}
        for _ in range(2):
            missing = [i for i, got in found.items() if got is None]
            if not missing:
                break
            for i in missing:
                self._put(i)
            self._wait()
            found.update({i: self._kept(i) for i in missing})
        self._say(found)
        return {i: words for i, words in found.items() if words}

    def summary(self, words: dict[int, list[Word]]) -> dict:
        """The job result's `word_timings`: the aligner, the sentences read along word by word and those not."""
        level = [i for i in range(len(self.plan.sentences)) if i not in words]
        return {
            "model": self.model,
            "sentences": len(words),
            "sentence_level": len(level),
            "sentence_level_indices": level[:100],
            "aligned": self.aligned,
            "aligned_s": round(self.busy_s, 3),
        }

    # The job thread's side.

    def _kept(self, index: int) -> list[Word] | None:
        """The words of the sentence's take as it is checkpointed now ([] where the aligner gave none usable): from
        its header, else from this attempt's results; None when it has not been aligned."""
        header = self.checkpoints.header(self.plan.keys[index])
        if header is None:
            return None
        sha = str(header["sha256"])
        got = from_record(header.get("words"), self.model, sha)
        if got is not None:
            return got
        with self._lock:
            done = self._results.get(index)
        return done[1] if done is not None and done[0] == sha else None

    def _why(self, index: int) -> str:
        header = self.checkpoints.header(self.plan.keys[index]) or {}
        kept = header.get("words")
        if isinstance(kept, dict) and kept.get("model") == self.model and kept.get("why"):
            return str(kept["why"])
        with self._lock:
            done = self._results.get(index)
        return (done[2] if done is not None else None) or "not aligned"

    def _say(self, found: dict[int, list[Word] | None]) -> None:
        level = sorted(i for i, words in found.items() if not words)
        if not level:
            return
        named = ", ".join(f"{i + 1} ({self._why(i)})" for i in level[:SHOWN])
        more = f", and {len(level) - SHOWN} more" if len(level) > SHOWN else ""
        log.warning(
            "job %s: word timings: %d of %d sentences are read along sentence by sentence (the aligner "
            "%s gave no usable words): sentence %s%s",
            self.ctx.job.id,
            len(level),
            len(found),
            self.model,
            named,
            more,
        )

    # The words thread's side: a batch of sentences whose words are aligned.

    def _process(self, batch: list[int]) -> None:
        self._align(batch)

    def _align(self, batch: list[int]) -> None:
        import numpy as np

        takes = []
        for index in dict.fromkeys(batch):  # once each
            cp = self.checkpoints.load(self.plan.keys[index])
            if cp is not None:  # None: removed since (its stitch synthesizes it again; collect aligns that take)
                takes.append((index, hashlib.sha256(cp.pcm.tobytes()).hexdigest(), cp.pcm))
        if not takes:
            return
        if self._aligner is None:
            assert self.ctx.aligner_for is not None
            self._aligner = self.ctx.aligner_for(self.model)  # on its first batch: synthesis goes on meanwhile
        sentences = [self.plan.sentences[i] for i, _, _ in takes]
        try:
            aligned = self._aligner.align(
                [pcm.astype(np.float32) / 32767.0 for *_, pcm in takes],
                texts=[s.text for s in sentences],
                languages=[s.language for s in sentences],
            )
        except NarrateError:
            raise
        except Exception as e:  # noqa: BLE001 - these sentences are read along sentence by sentence
            log.warning(
                "job %s: the aligner failed on sentences %s: %s: %s",
                self.ctx.job.id,
                ", ".join(str(i + 1) for i, _, _ in takes),
                type(e).__name__,
                e,
            )
            aligned = [[] for _ in takes]
        for (index, sha, pcm), words in zip(takes, aligned, strict=True):
            words = [(str(w), float(a), float(b)) for w, a, b in words]
            why = check_words(words, pcm.size / SAMPLE_RATE)
            self.checkpoints.record_words(self.plan.keys[index], record(self.model, sha, words, why), sha)
            with self._lock:
                self._results[index] = (sha, words if why is None else [], why)
                self.aligned += 1
