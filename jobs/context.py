"""What the worker hands a running job: the job itself, its settings, how to get an engine, the
stop flag, the liveness beat and an optional progress listener. The job function reads nothing
else of the worker, so jobs/ never imports narrate.worker and no state is process-wide."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from rq.job import Job

from .settings import Settings
from .synthesis import Engine

ProgressListener = Callable[[int, int, float], None]  # (done, total, audio seconds)


class StopRequested(Exception):
    """The worker was asked to stop: the job ends between batches and the worker requeues it."""


@dataclass
class JobContext:
    job: Job
    settings: Settings
    host_id: str  # identity of this host (recovery compares it with the job's meta.host)
    engine_for: Callable[[str | None, str | None], Engine]  # (model, quant) -> a loaded engine
    stop: threading.Event = field(default_factory=threading.Event)  # set: end after the batch in flight
    beat: Callable[[], None] = lambda: None  # call on every bit of progress (the hang watchdog reads it)
    on_progress: ProgressListener | None = None  # e.g. the progress bar of `narrate run`
    stopped_early: bool = False  # set by the job when it honoured `stop`: the worker requeues it

    def check_stop(self, done: int, total: int) -> None:
        """Between batches: end the job here if the worker was asked to stop."""
        if self.stop.is_set():
            self.stopped_early = True
            raise StopRequested(f"stopped after {done} of {total} sentences")
