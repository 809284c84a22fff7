"""What a worker process keeps between jobs: its settings, the warm models (and the proof pass's
recognizer, and the word timings' aligner), this host's identity and the liveness file its supervisor
watches. It builds each job's JobContext."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from narrate.jobs.settings import Settings
from narrate.jobs.task.context import JobContext, ProgressListener
from narrate.jobs.task.model_protocols import Aligner, Engine, Recognizer
from narrate.worker.process.host import host_id
from rq.job import Job

if TYPE_CHECKING:  # mlx: imported when the first model is loaded
    from narrate.worker.engine.models import ModelCache


class WorkerRuntime:
    def __init__(
        self, settings: Settings, progress_file: Path | None = None, on_progress: ProgressListener | None = None
    ):
        self.settings = settings
        self.host_id = host_id(settings.home)
        self.progress_file = progress_file  # touched on progress; the supervisor watches it
        self.on_progress = on_progress
        self._models: ModelCache | None = None
        self._recognizer: tuple[str, Recognizer] | None = None  # the last recognizer loaded, by the model asked
        self._aligner: tuple[str, Aligner] | None = None  # the last aligner loaded, likewise

    def engine_for(self, model: str | None, quant: str | None) -> Engine:
        s = self.settings
        if s.engine == "fake":
            from narrate.worker.testkit.fake_engine import FakeEngine

            return FakeEngine(s.batch_size)
        from narrate.worker.engine.mlx_engine import MlxEngine, is_gpu
        from narrate.worker.engine.models import ModelCache

        if self._models is None:
            self._models = ModelCache(capacity=s.model_cache, hashes=s.home / "weights-hashes.json")
        loaded = self._models.get(model or s.model, quant or s.quant)
        engine = MlxEngine(loaded, batch_size=s.batch_size, runaway_retries=s.runaway_retries)
        if is_gpu():  # minutes a new shape there: every row count at once, when the model is first loaded
            engine.warm_up(self.beat)  # (a CPU compiles a shape in well under a second, when first used)
        return engine

    def recognizer_for(self, model: str) -> Recognizer:
        """The proof pass's recognizer of `model` (a hub id or a local dir); the last one loaded stays warm."""
        if self._recognizer is not None and self._recognizer[0] == model:
            return self._recognizer[1]
        self._recognizer = None  # one at a time: the one before is dropped first
        if self.settings.engine == "fake":
            from narrate.worker.testkit.fake_recognizer import FakeRecognizer

            recognizer: Recognizer = FakeRecognizer()
        else:
            from narrate.worker.engine.recognizer import MlxRecognizer

            recognizer = MlxRecognizer.load(model)
        self._recognizer = (model, recognizer)
        return recognizer

    def aligner_for(self, model: str) -> Aligner:
        """The word timings' aligner of `model` (a hub id or a local dir); the last one loaded stays warm."""
        if self._aligner is not None and self._aligner[0] == model:
            return self._aligner[1]
        self._aligner = None
        if self.settings.engine == "fake":
            from narrate.worker.testkit.fake_aligner import FakeAligner

            aligner: Aligner = FakeAligner(model)
        else:
            from narrate.worker.engine.aligner import MlxAligner

            aligner = MlxAligner.load(model)
        self._aligner = (model, aligner)
        return aligner

    def beat(self, state: str = "busy") -> None:
        """Record liveness for the supervisor's hang watchdog ("busy": a job is making progress)."""
        if self.progress_file is not None:
            tmp = self.progress_file.with_suffix(".tmp")
            tmp.write_text(f"{state} {time.time():.3f} {os.getpid()}\n")
            os.replace(tmp, self.progress_file)

    def make_context(self, job: Job) -> JobContext:
        return JobContext(
            job=job,
            settings=self.settings,
            host_id=self.host_id,
            engine_for=self.engine_for,
            recognizer_for=self.recognizer_for,
            aligner_for=self.aligner_for,
            beat=self.beat,
            on_progress=self.on_progress,
        )
