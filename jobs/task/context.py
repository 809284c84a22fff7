"""What the worker hands a running job: the job itself, its settings, how to get an engine (and a
recognizer, for the proof pass; a forced aligner, for word timings), the stop flag, the liveness beat
and an optional progress listener.
The job function reads nothing else of the worker, so jobs/ never imports narrate.worker and no state
is process-wide.

Between batches the job asks whether to end: the worker is stopping (a warm stop: the job is
requeued), or the job was canceled (``narrate cancel``, rq's ``job.cancel()``, rq's stop-job
command) or deleted (rq-dashboard's Delete): then it ends for good, keeping its checkpoints."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from narrate.jobs.queue.lifecycle import cancel_reason
from narrate.jobs.settings import Settings
from narrate.jobs.task.model_protocols import Aligner, Engine, Recognizer
from narrate.jobs.task.rider_desk import RiderDesk
from rq.job import Job

ProgressListener = Callable[[int, int, float], None]  # (done, total, audio seconds)


class StopRequested(Exception):
    """The worker was asked to stop: the job ends between batches and the worker requeues it."""


class JobCanceled(StopRequested):
    """The job was canceled or deleted: it ends between batches and is not requeued."""


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
    cancel: threading.Event = field(default_factory=threading.Event)  # set by the worker (rq's stop-job command)
    canceled: str | None = None  # set by the job when it ended here: "canceled", "deleted" or "taken"
    riders: RiderDesk = field(default_factory=RiderDesk)  # other jobs' sentences its synthesis takes along
    recognizer_for: Callable[[str], Recognizer] | None = None  # model -> a loaded recognizer (the proof pass)
    aligner_for: Callable[[str], Aligner] | None = None  # model -> a loaded forced aligner (--word-timings)

    def check_stop(self, done: int, total: int) -> None:
        """Between batches: end the job here if it was canceled or deleted (for good), or if the
        worker was asked to stop (the job is requeued)."""
        self.check_canceled(done, total)
        if self.stop.is_set():
            self.stopped_early = True
            raise StopRequested(f"stopped after {done} of {total} sentences")

    def check_canceled(self, done: int, total: int) -> None:
        """End the job for good if it was canceled or deleted, or here if another worker has it now
        (one Redis round trip)."""
        reason: str | None
        if self.cancel.is_set():
            reason = "canceled"
        else:
            reason = cancel_reason(self.job.connection, self.job.id, self.job.worker_name)
        if reason is not None:
            self.canceled = reason
            said = "taken over by another worker" if reason == "taken" else reason
            raise JobCanceled(f"{said} after {done} of {total} sentences")
