"""One INFO line in the worker log per synthesized batch, so a long job shows how it advances:

    job narrate-...: batch 3/12: 8 sentences, 192 frames in 4.1 s (46.8 frames/s), 15.4 s of audio; 24/96 sentences done

A batch ends when the engine starts the next one (or the synthesis ends). The total is the
number of batches the job's missing sentences make at the first batch's size (the MLX engine's
windows are whole batches, so it is exact). A batch of sentences already synthesized once holds
the runaways of the batch before it (budget used without an end: their audio was dropped), which
that batch's line counts, with the frames and audio seconds it synthesized for them (then dropped:
the engine tells `on_dropped`); the retry is logged as "batch N/T, runaways again".
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Protocol

from narrate.jobs.settings import SAMPLE_RATE

log = logging.getLogger("narrate.jobs")


class Counts(Protocol):
    done: int
    total: int


@dataclass
class _Batch:
    label: str
    sentences: int
    waiting: set[int]  # its sentences whose last chunk has not come yet
    started: float = field(default_factory=time.monotonic)
    frames: int = 0
    samples: int = 0
    logged: bool = False


class BatchLog:
    """Chunks are counted to the batch of their sentence (told by ``chunk(..., index=)``): with
    continuous batching the next batch starts while rows of this one still run, so a batch's
    line is written when its last sentence ends (or its runaways start again), not when the next
    batch starts. Without an index a chunk counts to the latest batch, and a batch ends when the
    next starts (static batches)."""

    def __init__(self, job_id: str, todo: int, progress: Counts):
        self.job_id = job_id
        self.todo = todo  # sentences this attempt synthesizes
        self.progress = progress  # sentences done / in the whole job, when a batch ends
        self.number = 0
        self.total: int | None = None
        self.seen: set[int] = set()
        self.batches: list[_Batch] = []
        self.owner: dict[int, _Batch] = {}
        self.indexed = False  # chunks carry their sentence

    @property
    def current(self) -> _Batch | None:
        return self.batches[-1] if self.batches and not self.batches[-1].logged else None

    def start(self, indices: list[int]) -> None:
        """The engine starts a batch of these sentences. Sentences that come again were runaways of
        the batch they were in (their audio was dropped): that batch's line says so."""
        again = bool(indices) and all(i in self.seen for i in indices)
        if self.indexed:
            for b in [b for b in self.batches if not b.logged and b.waiting & set(indices)]:
                hit = b.waiting & set(indices)
                b.waiting -= hit
                self._log(b, runaways=len(hit) if again else 0)
        elif self.current is not None:
            self._log(self.current, runaways=len(indices) if again else 0)
        if self.total is None:
            self.total = max(1, math.ceil(self.todo / max(1, len(indices))))
        if not again:
            self.number += 1
        label = f"batch {self.number}/{max(self.total, self.number)}" + (", runaways again" if again else "")
        self.seen.update(indices)
        b = _Batch(label, len(indices), set(indices))
        self.batches.append(b)
        self.owner.update(dict.fromkeys(indices, b))

    def chunk(self, frames: int, samples: int, index: int | None = None, final: bool = False) -> None:
        if index is not None:
            self.indexed = True
        b = self.owner.get(index) if index is not None else self.current
        if b is None or b.logged:
            return
        b.frames += frames
        b.samples += samples
        if index is not None and final:
            b.waiting.discard(index)
            if not b.waiting:
                self._log(b)

    def finish(self, runaways: int = 0) -> None:
        """Log every batch not logged yet (nothing when none is)."""
        for b in self.batches:
            if not b.logged:
                self._log(b, runaways)

    def _log(self, b: _Batch, runaways: int = 0) -> None:
        b.logged = True
        wall = max(time.monotonic() - b.started, 1e-6)
        dropped = (
            f", {runaways} runaway{_s(runaways)} (no end within the budget) to synthesize again" if runaways else ""
        )
        log.info(
            "job %s: %s: %d sentence%s, %d frames in %.1f s (%.1f frames/s), %.1f s of audio%s; %d/%d sentences done",
            self.job_id,
            b.label,
            b.sentences,
            _s(b.sentences),
            b.frames,
            wall,
            b.frames / wall,
            b.samples / SAMPLE_RATE,
            dropped,
            self.progress.done,
            self.progress.total,
        )


def _s(n: int) -> str:
    return "" if n == 1 else "s"
