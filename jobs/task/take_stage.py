"""What the proof pass (proof_pass.py) and word timings (word_timings.py) share: a stage that takes a job's takes
beside synthesis, on a thread of its own. The job thread queues work (``_put``) and goes on; the stage's thread
prepares once as it starts (a model loaded while the first takes are synthesized), then takes what has queued up,
in batches of up to BATCH (waiting at most GATHER_S for GATHER of them, and not at all once the job thread waits
for it), and works through each batch (``_process``). The job thread counts on ``pending`` (queued, not done),
raises the thread's first error (a NarrateError as it is, anything else as the stage's ``Failed``), and waits
(``_wait``) with beats for the hang watchdog and cancel checks. Leaving the stage (``with``) stops the thread:
what is still queued is left for a later attempt."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import ClassVar, Generic, TypeVar

from narrate.jobs.errors import NarrateError
from narrate.jobs.task.context import JobContext

Item = TypeVar("Item")
WAIT_POLL_S = 1.0  # while the job thread waits for the stage: a beat and a cancel check this often


class TakeStage(Generic[Item]):
    BATCH: ClassVar[int] = 8  # items taken in one batch at most
    GATHER: ClassVar[int] = 1  # the thread waits up to GATHER_S for this many items before a batch
    GATHER_S: ClassVar[float] = 0.0
    NAME: ClassVar[str] = "narrate-take-stage"  # its thread's
    FAILED: ClassVar[str] = "the stage failed"  # the start of the job's error when the thread raised

    class Failed(RuntimeError):
        """The stage's thread raised something other than a NarrateError: the job fails with it."""

    def __init__(self, ctx: JobContext, sentences: int):
        self.ctx, self._sentences = ctx, sentences
        self._queue: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._pending = 0  # items queued and not done
        self._lock = threading.Condition()
        self._flush = threading.Event()  # the job thread waits: batches are no longer gathered
        self._error: BaseException | None = None
        self._closing = False  # the job ends (a stop, a cancel, a failure, or done): what is queued is left
        self._thread: threading.Thread | None = None
        self.busy_s = 0.0  # seconds the thread spent preparing and working through batches

    # The job thread's side.

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self.NAME, daemon=True)
                self._thread.start()

    def _put(self, item: Item) -> None:
        with self._lock:
            self._pending += 1
        self._start()
        self._queue.put(item)

    def _raise(self) -> None:
        with self._lock:
            error = self._error
        if isinstance(error, NarrateError):  # a model that cannot be had: said as it is, not retried
            raise error
        if error is not None:
            raise self.Failed(f"{self.FAILED}: {type(error).__name__}: {error}") from error

    def _wait(self, between: Callable[[], None] | None = None) -> float:
        """Until every item queued is done (beats for the hang watchdog, cancel checks, `between` each look);
        raises the thread's error; the seconds waited."""
        t0 = time.monotonic()
        self._flush.set()  # nothing more comes before these are done: the thread gathers no longer
        while True:
            with self._lock:
                if self._pending == 0 or self._error is not None:
                    break
                self._lock.wait(WAIT_POLL_S)
            self.ctx.beat()
            self.ctx.check_canceled(self._sentences, self._sentences)
            if between is not None:
                between()
        self._raise()
        return time.monotonic() - t0

    def __enter__(self) -> TakeStage[Item]:
        return self

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self._thread is not None:
            self._closing = True  # what is still queued is left: a later attempt takes it from the checkpoints
            self._queue.put(None)
            self._thread.join(timeout=60)

    # The stage's thread.

    def _prepare(self) -> None:
        """Once, as the thread starts (a model loaded)."""

    def _process(self, batch: list[Item]) -> None:
        raise NotImplementedError

    def _serve(self) -> None:
        if not self._timed(self._prepare):
            return
        while True:
            first = self._queue.get()
            if first is None or self._closing:
                return
            batch = [first]
            until = time.monotonic() + self.GATHER_S
            while len(batch) < self.BATCH:
                wait = until - time.monotonic()
                gathering = len(batch) < self.GATHER and wait > 0 and not self._flush.is_set()
                try:
                    more = self._queue.get(timeout=min(wait, 0.05)) if gathering else self._queue.get_nowait()
                except queue.Empty:
                    if gathering:
                        continue
                    break
                if more is None:
                    self._queue.put(None)
                    break
                batch.append(more)
            try:
                if not self._timed(self._process, batch):
                    return
            finally:
                with self._lock:
                    self._pending -= len(batch)
                    self._lock.notify_all()

    def _timed(self, work: Callable[..., None], *args: object) -> bool:
        """`work` on the thread, its time counted in ``busy_s``; False if it raised (the error is kept for the job
        thread to raise)."""
        t0 = time.monotonic()
        try:
            work(*args)
        except BaseException as e:  # noqa: BLE001 - the job thread raises it
            with self._lock:
                self._error = e
                self._lock.notify_all()
            return False
        self.busy_s += time.monotonic() - t0
        return True
