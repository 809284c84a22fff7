"""The per-process worker runtime: settings, warm models, the host identity and the signals a
running job needs (stop requested, progress for the hang watchdog). Jobs reach it here."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from narrate.jobs.settings import Settings

_runtime: Runtime | None = None


class Runtime:
    def __init__(self, settings: Settings):
        self.settings = settings
        self._models = None
        self.stop_requested = False  # a warm shutdown: finish the batch in flight, then requeue
        self.requeue_current = False  # set by a job that stopped early on purpose
        self.host_id = f"{socket.gethostname()}:{settings.lock_path}"
        self.progress_file: Path | None = None  # touched on progress; the supervisor watches it

    def engine(self, model: str | None, quant: str | None):
        if self.settings.engine == "fake":
            from .testkit.fake_engine import FakeEngine

            return FakeEngine(self.settings.batch_size)
        from .mlx_engine import MlxEngine
        from .models import ModelCache

        if self._models is None:
            self._models = ModelCache(hashes=self.settings.home / "weights-hashes.json")
        loaded = self._models.get(model or self.settings.model, quant or self.settings.quant)
        return MlxEngine(loaded, batch_size=self.settings.batch_size, runaway_retries=self.settings.runaway_retries)

    def beat(self, state: str = "busy") -> None:
        """Record liveness for the supervisor's hang watchdog ("busy": a job is making progress)."""
        if self.progress_file is not None:
            tmp = self.progress_file.with_suffix(".tmp")
            tmp.write_text(f"{state} {time.time():.3f} {os.getpid()}\n")
            os.replace(tmp, self.progress_file)


def get_runtime() -> Runtime:
    global _runtime
    if _runtime is None:
        _runtime = Runtime(Settings.from_env())
    return _runtime


def set_runtime(runtime: Runtime) -> None:
    global _runtime
    _runtime = runtime
