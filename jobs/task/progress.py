"""Progress of the running job: saved to job.meta["progress"] (what `status`, `list`, `watch` and
rq-dashboard show), at most every half second, and passed to the context's listener. Besides the
counts it holds this attempt's pace: ``realtime_factor`` (audio seconds per synthesis wall second)
and ``eta_seconds`` (the sentences left at the pace of those synthesized so far)."""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Callable

import redis
from narrate.jobs.queue.lifecycle import save_meta_if_its_workers
from narrate.jobs.task.context import ProgressListener
from rq.job import Job

log = logging.getLogger("narrate.jobs")
SAVE_INTERVAL_S = 0.5


def save_meta(job: Job) -> None:
    """Save the running job's meta (its worker's, while the job is still its own: atomic, one round
    trip). Best effort: a Redis outage must not fail the synthesis it describes."""
    try:
        if not job.worker_name:  # not run by a worker
            job.save_meta()
        elif not save_meta_if_its_workers(job.connection, job):
            log.info("job %s is no longer this worker's: its meta is left to the worker that has it", job.id)
    except redis.RedisError as e:
        log.warning("could not save progress of job %s: %s", job.id, e)


Span = tuple[int, int, str]  # a chapter's sentences [first, end) and its title


class Progress:
    def __init__(
        self,
        job: Job,
        total: int,
        done: int = 0,
        listener: ProgressListener | None = None,
        save: Callable[[Job], None] = save_meta,
        audio_seconds: float = 0.0,
        chapters: list[Span] | None = None,
        done_indices: set[int] | None = None,
    ):
        self.job = job
        self.total = total
        self.done = done
        self.audio_seconds = audio_seconds  # of every sentence done: checkpointed before this attempt too
        self.attempt_audio = 0.0  # synthesized by this attempt (its realtime factor)
        self.synthesized = 0  # sentences synthesized by this attempt (done also counts checkpoints)
        self._started: float | None = None  # monotonic start of this attempt's synthesis
        self._last = 0.0  # monotonic time the last sentence was synthesized
        self._listener = listener
        self._save = save
        self._saved_at = 0.0
        self.chapters = chapters or []  # with `done_indices`: each chapter's sentences done, saved too
        self.done_indices = done_indices if done_indices is not None else set()
        self._firsts = [first for first, _, _ in self.chapters]
        self.chapter_done = [sum(1 for i in self.done_indices if first <= i < end) for first, end, _ in self.chapters]

    def start_synthesis(self) -> None:
        if self._started is None:  # a checkpoint synthesized again while stitching keeps the pace
            self._started = time.monotonic()

    def sentence_done(self, audio_seconds: float, index: int | None = None) -> None:
        if index is not None and index not in self.done_indices:  # counted once (a vanished checkpoint redone)
            self.done_indices.add(index)
            k = bisect.bisect_right(self._firsts, index) - 1
            if k >= 0:
                self.chapter_done[k] += 1
        self.done += 1
        self.synthesized += 1
        self.audio_seconds += audio_seconds
        self.attempt_audio += audio_seconds
        now = self._last = time.monotonic()
        if self.done == self.total or now - self._saved_at >= SAVE_INTERVAL_S:
            self.save()
            self._saved_at = now
        if self._listener is not None:
            self._listener(self.done, self.total, self.audio_seconds)

    def pace(self) -> tuple[float | None, float | None]:
        """(realtime factor, ETA in seconds) of this attempt so far; None where unknown yet."""
        if self.done >= self.total:
            return self._factor(), 0.0
        if self._started is None or self.synthesized == 0:
            return None, None
        wall = time.monotonic() - self._started
        return self._factor(), round((self.total - self.done) * wall / self.synthesized, 1)

    def _factor(self) -> float | None:
        """Audio seconds per wall second, up to the last sentence synthesized (stitching not counted)."""
        if self._started is None or self.attempt_audio <= 0:
            return None
        wall = self._last - self._started
        return round(self.attempt_audio / wall, 3) if wall > 0 else None

    def save(self) -> None:
        factor, eta = self.pace()
        self.job.meta["progress"] = {
            "done": self.done,
            "total": self.total,
            "audio_seconds": round(self.audio_seconds, 3),
            "realtime_factor": factor,
            "eta_seconds": eta,
        }
        if self.chapters:
            self.job.meta["progress"]["chapters"] = [
                {"title": title, "done": done, "total": end - first}
                for (first, end, title), done in zip(self.chapters, self.chapter_done, strict=True)
            ]
        self._save(self.job)
