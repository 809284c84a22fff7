"""The desk where a running book takes riders (jobs.book.synthesis.Rider): other jobs' sentences that
join its batches. The worker's clip watch (narrate.worker.process.clip_watch) offers them from its
thread; the book's synthesis takes them between steps, on its own thread. The desk is open only
while the book's engine is synthesizing (a book loading, stitching or exporting has no batch to
join: the watch then yields the worker instead), and says which model it has loaded: only a rider
for that model may board. What is still on the desk when it closes goes back to its queue."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from narrate.jobs.task.model_protocols import Engine, Rider

log = logging.getLogger("narrate.jobs")


class RiderDesk:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model: tuple[str, str] | None = None  # (source, quant) while open
        self._waiting: list[Rider] = []
        self.refused: set[str] = set()  # jobs given back once: they run on their own (and say why)
        self.taken = 0  # riders that boarded a batch
        self.opened: Callable[[], None] | None = None  # told when it opens (the clip watch looks at the queue)

    def open(self, engine: Engine) -> bool:
        """Open for riders while `engine` synthesizes (False: this engine takes none)."""
        if not engine.rides:
            return False
        with self._lock:
            self._model = (engine.source, engine.quant)
        told = self.opened
        if told is not None:
            told()
        return True

    def model(self) -> tuple[str, str] | None:
        """(source, quant) of the model a rider must ask for; None: closed."""
        with self._lock:
            return self._model

    def offer(self, rider: Rider) -> bool:
        """Leave `rider` for the synthesis to take at its next step (False: the desk is closed)."""
        with self._lock:
            if self._model is None:
                return False
            self._waiting.append(rider)
            return True

    def take(self) -> list[Rider]:
        """The riders left since the last call (the synthesis's side)."""
        with self._lock:
            taken, self._waiting = self._waiting, []
            self.taken += len(taken)
            return taken

    def close(self) -> None:
        """No more riders; those not taken yet go back to their queues."""
        with self._lock:
            self._model = None
            left, self._waiting = self._waiting, []
        for rider in left:
            try:
                rider.give_back("the book's synthesis ended before it could join")
            except Exception as e:  # noqa: BLE001 - its claim stays: the host's next worker puts it back
                log.warning("could not give a rider back: %s", e)
