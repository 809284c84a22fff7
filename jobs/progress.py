"""Progress of the running job: saved to job.meta (what `status` and rq-dashboard show) and
passed to in-process listeners (the progress bar of `narrate run`)."""

from __future__ import annotations

import time
from collections.abc import Callable

Listener = Callable[[int, int, float], None]
_listeners: list[Listener] = []


def add_listener(fn: Listener) -> None:
    _listeners.append(fn)


def remove_listener(fn: Listener) -> None:
    if fn in _listeners:
        _listeners.remove(fn)


class Progress:
    def __init__(self, job, total: int, done: int = 0, min_interval_s: float = 0.5, save=None):
        self.job = job
        self.total = total
        self.done = done
        self._save = save or (lambda job: job.save_meta())
        self.audio_seconds = 0.0
        self.min_interval_s = min_interval_s
        self._saved_at = 0.0

    def sentence_done(self, audio_seconds: float) -> None:
        self.done += 1
        self.audio_seconds += audio_seconds
        now = time.monotonic()
        if self.done == self.total or now - self._saved_at >= self.min_interval_s:
            self.save()
            self._saved_at = now
        for fn in list(_listeners):
            fn(self.done, self.total, self.audio_seconds)

    def save(self) -> None:
        if self.job is None:
            return
        self.job.meta["progress"] = {
            "done": self.done,
            "total": self.total,
            "audio_seconds": round(self.audio_seconds, 3),
        }
        self._save(self.job)
