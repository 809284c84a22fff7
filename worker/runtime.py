"""The per-process worker runtime: settings, warm models, the host lock. Jobs reach it here."""

from __future__ import annotations

from narrate.jobs.settings import Settings

from .engine import Engine
from .models import ModelCache

_runtime: Runtime | None = None


class Runtime:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.models = ModelCache()

    def engine(self, model: str | None, quant: str | None) -> Engine:
        loaded = self.models.get(model or self.settings.model, quant or self.settings.quant)
        return Engine(
            loaded, batch_size=self.settings.batch_size, runaway_retries=self.settings.runaway_retries
        )


def get_runtime() -> Runtime:
    global _runtime
    if _runtime is None:
        _runtime = Runtime(Settings.from_env())
    return _runtime


def set_runtime(runtime: Runtime) -> None:
    global _runtime
    _runtime = runtime
