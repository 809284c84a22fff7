"""Progress of the running job: saved to job.meta["progress"] (what `status` and rq-dashboard
show), at most every half second, and passed to the context's listener."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import redis
from rq.job import Job

from .context import ProgressListener

log = logging.getLogger("narrate.jobs")
SAVE_INTERVAL_S = 0.5


def save_meta(job: Job) -> None:
    """Job meta is best effort: a Redis outage must not fail the synthesis it describes."""
    try:
        job.save_meta()
    except redis.RedisError as e:
        log.warning("could not save progress of job %s: %s", job.id, e)


class Progress:
    def __init__(self, job: Job, total: int, done: int = 0, listener: ProgressListener | None = None,
                 save: Callable[[Job], None] = save_meta):  # fmt: skip
        self.job = job
        self.total = total
        self.done = done
        self.audio_seconds = 0.0
        self._listener = listener
        self._save = save
        self._saved_at = 0.0

    def sentence_done(self, audio_seconds: float) -> None:
        self.done += 1
        self.audio_seconds += audio_seconds
        now = time.monotonic()
        if self.done == self.total or now - self._saved_at >= SAVE_INTERVAL_S:
            self.save()
            self._saved_at = now
        if self._listener is not None:
            self._listener(self.done, self.total, self.audio_seconds)

    def save(self) -> None:
        self.job.meta["progress"] = {
            "done": self.done,
            "total": self.total,
            "audio_seconds": round(self.audio_seconds, 3),
        }
        self._save(self.job)
