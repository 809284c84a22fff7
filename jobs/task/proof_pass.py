"""The proof pass of a job (``--proof``, docs/proof.md): every sentence's take heard back by a speech recognizer
beside synthesis, judged (jobs.proof.verdict), a flagged one synthesized again with a new seed up to the job's
retakes, the best take kept.

Threads: the job thread synthesizes and checkpoints as before; each checkpoint saved is handed to ``heard``, which
queues it for the proof thread and returns at once, so the decode loop keeps its pace. The proof thread has the
worker load the recognizer as it starts (while the first takes are synthesized; the worker's recognizer runs on a
thread of its own), then gathers takes (up to BATCH: it waits at most GATHER_S for GATHER of them, and not at all
once the job thread waits for it, since a decode of a few takes costs about as many steps as one of many), has the
recognizer transcribe them together, judges each take and, once a sentence's proof is final (a take judged ok, or
its retakes used up), writes the record into the sentence's checkpoint header, with the best take's audio if that
is not the one there. The job thread hands final sentences to the stitcher (``on_final``), never earlier: a take
that may still be replaced is not stitched.

After synthesis, ``settle`` waits for what is queued, synthesizes the flagged sentences again (each round one
more take with a new seed, as a batch), and finally keeps the best take of each sentence still open. A sentence
whose final record is in its checkpoint (an earlier attempt, the sentence cache) is not heard again; one
checkpointed without a final record (a crash mid-proof, a book's parts) is heard from its checkpoint."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from narrate.jobs.audio.subtitles import Cue
from narrate.jobs.book.checkpoints import Checkpoint, CheckpointStore, int16
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.result import ChapterMark
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.book.synthesis import Chunk, OnBatch, Sentence
from narrate.jobs.errors import BadInput
from narrate.jobs.proof import report
from narrate.jobs.proof.recognizer_choice import proof_model
from narrate.jobs.proof.report import Place
from narrate.jobs.proof.takes import Counts, Norms, Record, Take, final_record, retake_seed
from narrate.jobs.proof.verdict import Thresholds, judge
from narrate.jobs.settings import SAMPLE_RATE
from narrate.jobs.task.context import JobContext
from narrate.jobs.task.model_protocols import Recognizer
from narrate.jobs.task.take_stage import TakeStage

log = logging.getLogger("narrate.jobs")
Retake = Callable[[list[Sentence], OnBatch], Iterator[Chunk]]  # the engine's synthesis of retakes in the job's voice
Queued = tuple[int, int, Checkpoint | None]  # a sentence, the seed of its take, the take (None: its checkpoint's)


class ProofPass(TakeStage[Queued]):
    """Takes queued as their checkpoints are saved; batches of up to 32 transcribed together (the proof thread
    waits at most 2 s for 16 of them)."""

    BATCH, GATHER, GATHER_S = 32, 16, 2.0
    NAME, FAILED = "narrate-proof-pass", "the proof pass failed"

    def __init__(self, ctx: JobContext, spec: JobSpec, plan: Plan, checkpoints: CheckpointStore, model: str):
        super().__init__(ctx, len(plan.sentences))
        self.plan, self.checkpoints, self.model = plan, checkpoints, model
        self.retakes = spec.retakes
        self.accepted = frozenset(spec.accepted or ())  # takes a person accepted by ear (`narrate redo --accept`)
        self.thresholds = Thresholds.from_settings(ctx.settings)
        self.records: dict[int, Record] = {}  # every sentence heard: its takes so far
        self.norms = Norms()
        self._audio: dict[int, list[Checkpoint]] = {}  # the takes of sentences not final yet
        self._finals: list[int] = []  # final since the job thread last looked
        self._recognizer: Recognizer | None = None
        self._on_final: Callable[[int], None] = lambda i: None
        self.waited_s = 0.0  # seconds the job thread waited for it after synthesis (its wall time beyond synthesis)
        self.retakes_s = 0.0  # seconds synthesizing retakes

    @classmethod
    def open(cls, ctx: JobContext, spec: JobSpec, plan: Plan, checkpoints: CheckpointStore) -> ProofPass:
        assert spec.proof is not None
        if ctx.recognizer_for is None:
            raise BadInput("this worker cannot run the proof pass (it has no recognizer)")
        model = proof_model(spec.proof, {s.language for s in plan.sentences}, ctx.settings.proof_model)
        return cls(ctx, spec, plan, checkpoints, model)

    def to_hear(self, checkpointed: Iterable[int]) -> list[Sentence]:
        """Of the sentences checkpointed before this attempt, those whose proof is not final (the others' records
        are kept: they are not heard again)."""
        out = []
        for i in checkpointed:
            if i in self.accepted:  # neither heard nor counted: its take is the one kept
                continue
            header = self.checkpoints.header(self.plan.keys[i]) or {}
            record = final_record(header.get("proof"), self.model)
            if record is None:
                out.append(self.plan.sentences[i])
            else:
                self.records[i] = record
                self.norms.add(self.plan.sentences[i].voice, record.verdict)
        return out

    def start(self, on_final: Callable[[int], None], to_hear: list[Sentence], to_synthesize: bool) -> None:
        """Start the proof thread if anything is to be heard (it loads the recognizer, so the synthesis starts
        meanwhile) and queue `to_hear`; `on_final` is told each sentence whose proof is final, on the job thread."""
        self._on_final = on_final
        if not to_hear and not to_synthesize:
            return
        self.ctx.job.meta["proof"] = {"model": self.model, **Counts.of(self.records.values()).to_json()}
        self._start()  # the recognizer loads as the thread starts
        for s in to_hear:
            self._queue_take(s.index, None)

    def heard(self, index: int) -> None:
        """A sentence's checkpoint was saved (the job thread): queue its take, hand on what became final (an
        accepted sentence's take is final as it is)."""
        if index in self.accepted:
            with self._lock:
                self._finals.append(index)
        else:
            self._queue_take(index, None)
        self.deliver()

    def deliver(self) -> None:
        """Tell `on_final` (on the job thread) the sentences whose proof became final; raise the proof thread's
        error."""
        self._raise()
        with self._lock:
            finals, self._finals = self._finals, []
        for i in finals:
            self._on_final(i)
        if finals:
            self.ctx.job.meta["proof"] = {"model": self.model, **self.counts().to_json()}

    def settle(self, retake: Retake) -> None:
        """After synthesis: wait for the takes queued, synthesize the flagged sentences again round by round (one
        more take each, with a new seed), then keep the best take of every sentence still open."""
        if self._thread is None:
            self.deliver()
            return
        for _ in range(self.retakes):
            self._wait()
            with self._lock:
                open_ = sorted(i for i, r in self.records.items() if not r.final)
            if not open_:
                break
            again = [
                dataclasses.replace(
                    self.plan.sentences[i], seed=retake_seed(self.plan.sentences[i].seed, len(self.records[i].takes))
                )
                for i in open_
            ]
            log.info(
                "job %s: proof: %d sentence(s) flagged, synthesized again: %s",
                self.ctx.job.id,
                len(again),
                ", ".join(f"{i} ({self.records[i].takes[-1].verdict.said()})" for i in open_[:10]),
            )
            t0 = time.monotonic()
            self._synthesize(retake, again)
            self.retakes_s += time.monotonic() - t0
        self._wait()
        with self._lock:
            for i in sorted(i for i, r in self.records.items() if not r.final):
                self._finalize(i)
        self.deliver()

    def counts(self) -> Counts:
        with self._lock:
            return Counts.of(list(self.records.values()))

    def summary(self, cues: Sequence[Cue] = (), chapters: Sequence[ChapterMark] = ()) -> dict:
        """The job result's `proof`: the recognizer, the counts, where the time went, and the flagged sentences
        (jobs/proof/report.py), placed in the book by the stitched `cues` (their `chapter`: an index into
        `chapters`)."""
        times = {"heard_s": self.busy_s, "waited_s": self.waited_s, "retakes_s": self.retakes_s}
        with self._lock:
            records = dict(self.records)
        places = {
            c.index: Place(c.start / SAMPLE_RATE, c.end / SAMPLE_RATE, *_chapter(c.chapter, chapters)) for c in cues
        }
        spoken = [s.text for s in self.plan.sentences]
        listed, left_out = report.sentences(records, self.plan.originals, spoken, places)
        return {
            "model": self.model,
            **self.counts().to_json(),
            **{k: round(v, 3) for k, v in times.items()},
            "sentences": listed,
            "sentences_left_out": left_out,
        }

    # The job thread's side.

    def _queue_take(self, index: int, take: Checkpoint | None, seed: int | None = None) -> None:
        self._put((index, seed if seed is not None else self.plan.sentences[index].seed, take))

    def _wait(self, between: Callable[[], None] | None = None) -> float:
        """Until every take queued is judged, handing on what becomes final meanwhile."""
        waited = super()._wait(between=self.deliver)
        self.waited_s += waited
        self.deliver()
        return waited

    def _synthesize(self, retake: Retake, sentences: list[Sentence]) -> None:
        parts: dict[int, list[Chunk]] = {}
        n = len(self.plan.sentences)

        def on_batch(indices: list[int]) -> None:
            self.ctx.check_stop(n, n)
            self.ctx.beat()

        seeds = {s.index: s.seed for s in sentences}
        for chunk in retake(sentences, on_batch):
            self.ctx.beat()
            parts.setdefault(chunk.index, []).append(chunk)
            if chunk.final:
                import numpy as np

                done = parts.pop(chunk.index)
                pcm = np.concatenate([c.pcm for c in done]) if done else np.zeros(0, np.float32)
                take = Checkpoint(int16(pcm), sum(c.frames for c in done), chunk.runaway, chunk.takes)
                self._queue_take(chunk.index, take, seeds[chunk.index])
                self.deliver()

    # The proof thread's side.

    def _prepare(self) -> None:  # at once: the recognizer loads while the first takes are synthesized
        assert self.ctx.recognizer_for is not None
        self._recognizer = self.ctx.recognizer_for(self.model)

    def _process(self, batch: list[Queued]) -> None:
        self._judge(batch)

    def _judge(self, batch: list[Queued]) -> None:
        import numpy as np

        takes = []
        for index, seed, take in batch:
            got = take if take is not None else self.checkpoints.load(self.plan.keys[index])
            if got is not None:  # None: removed since it was saved (its stitch synthesizes it again, unheard)
                takes.append((index, seed, got, got.pcm.astype(np.float32) / 32767.0))  # as the verdict reads it
        sentences = [self.plan.sentences[i] for i, _, _, _ in takes]
        assert self._recognizer is not None
        texts = self._recognizer.transcribe(
            [pcm for *_, pcm in takes], languages=[s.language for s in sentences], texts=[s.text for s in sentences]
        )
        for (index, seed, got, pcm), s, text in zip(takes, sentences, texts, strict=True):
            verdict = judge(
                s.text, text, pcm, language=s.language, norm=self.norms.norm(s.voice), thresholds=self.thresholds
            )
            with self._lock:
                record = self.records.setdefault(index, Record(self.model))
                record.takes.append(Take(seed, verdict))
                self._audio.setdefault(index, []).append(got)
                self.norms.add(s.voice, verdict)
                if verdict.ok or len(record.takes) > self.retakes:
                    self._finalize(index)

    def _finalize(self, index: int) -> None:
        """Keep the best take (its audio into the checkpoint if it is not there) with the final record (under
        the lock)."""
        record = self.records[index]
        record.kept, record.final = record.best(), True
        takes = self._audio.pop(index, [])
        kept = takes[record.kept] if record.kept < len(takes) else None
        self.checkpoints.record_proof(self.plan.keys[index], record.to_json(), kept)
        if not record.verdict.ok:
            log.info(
                "job %s: proof: sentence %d kept take %d of %d, still flagged: %s",
                self.ctx.job.id,
                index,
                record.kept + 1,
                len(record.takes),
                record.verdict.said(),
            )
        self._finals.append(index)


def _chapter(at: int | None, chapters: Sequence[ChapterMark]) -> tuple[int | None, str | None]:
    """A cue's chapter as the report says it: its number (1 first) and title; (None, None) before the first."""
    if at is None or not 0 <= at < len(chapters):
        return None, None
    return at + 1, chapters[at].title
