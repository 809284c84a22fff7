"""One INFO line in the worker log per synthesized batch, so a long job shows how it advances:

    job narrate-...: batch 3/12: 8 sentences, 192 frames in 4.1 s (46.8 frames/s), 15.4 s of audio; 24/96 sentences done

A batch ends when the engine starts the next one (or the synthesis ends). The total is the
number of batches the job's missing sentences make at the first batch's size (the MLX engine's
windows are whole batches, so it is exact). A batch of sentences already synthesized once holds
the runaways of the batch before it (budget used without an end: their audio was dropped), which
that batch's line counts; the retry is logged as "batch N/T, runaways again".
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
    started: float = field(default_factory=time.monotonic)
    frames: int = 0
    samples: int = 0


class BatchLog:
    def __init__(self, job_id: str, todo: int, progress: Counts):
        self.job_id = job_id
        self.todo = todo  # sentences this attempt synthesizes
        self.progress = progress  # sentences done / in the whole job, when a batch ends
        self.number = 0
        self.total: int | None = None
        self.seen: set[int] = set()
        self.current: _Batch | None = None

    def start(self, indices: list[int]) -> None:
        """The engine starts a batch of these sentences: the one before it has ended. Sentences
        that come again were runaways of that batch (their audio was dropped)."""
        again = bool(indices) and all(i in self.seen for i in indices)
        self.finish(runaways=len(indices) if again else 0)
        if self.total is None:
            self.total = max(1, math.ceil(self.todo / max(1, len(indices))))
        if not again:
            self.number += 1
        label = f"batch {self.number}/{max(self.total, self.number)}" + (", runaways again" if again else "")
        self.seen.update(indices)
        self.current = _Batch(label, len(indices))

    def chunk(self, frames: int, samples: int) -> None:
        if self.current is not None:
            self.current.frames += frames
            self.current.samples += samples

    def finish(self, runaways: int = 0) -> None:
        """Log the batch in flight as done (nothing when none is)."""
        b, self.current = self.current, None
        if b is None:
            return
        wall = max(time.monotonic() - b.started, 1e-6)
        dropped = (
            f", {runaways} runaway{_s(runaways)} (no end within the budget) to synthesize again" if runaways else ""
        )
        log.info(
            "job %s: %s: %d sentence%s, %d frames in %.1f s (%.1f frames/s), %.1f s of audio%s; %d/%d sentences done",
            self.job_id, b.label, b.sentences, _s(b.sentences), b.frames, wall, b.frames / wall,
            b.samples / SAMPLE_RATE, dropped, self.progress.done, self.progress.total,
        )  # fmt: skip


def _s(n: int) -> str:
    return "" if n == 1 else "s"
