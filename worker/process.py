"""The worker process: a non-forking RQ worker (models stay warm across jobs) that uses the JSON
serializer and runs only narrate's own job function."""

from __future__ import annotations

import logging

from narrate.jobs.api import JOB_FUNCTION
from narrate.jobs.connection import Connection
from narrate.jobs.settings import Settings
from rq import Queue, SimpleWorker
from rq.job import Job
from rq.serializers import JSONSerializer

from .runtime import Runtime, set_runtime

ALLOWED_FUNCTIONS = frozenset({JOB_FUNCTION})
ALLOWED_CALLBACKS: frozenset[str] = frozenset()


class RefusedJob(Exception):
    """A job names a function or callback narrate does not run (a forged or foreign job)."""


class AllowlistedJob(Job):
    """A job that refuses to import anything but narrate's own job function."""

    def perform(self):
        if self.func_name not in ALLOWED_FUNCTIONS:
            raise RefusedJob(f"refusing to run {self.func_name!r}: not a narrate job function")
        return super().perform()

    def _check_callback(self, name: str | None) -> None:
        if name is not None and name not in ALLOWED_CALLBACKS:
            raise RefusedJob(f"refusing callback {name!r}: not allowed")

    @property
    def success_callback(self):
        self._check_callback(self._success_callback_name)
        return super().success_callback

    @property
    def failure_callback(self):
        self._check_callback(self._failure_callback_name)
        return super().failure_callback

    @property
    def stopped_callback(self):
        self._check_callback(self._stopped_callback_name)
        return super().stopped_callback


class NarrateWorker(SimpleWorker):
    """SimpleWorker: the job runs in this process, so loaded models survive between jobs."""

    job_class = AllowlistedJob


def make_worker(conn: Connection, queue_names: list[str]) -> NarrateWorker:
    r = conn.redis
    queues = [
        Queue(n, connection=r, serializer=JSONSerializer, job_class=AllowlistedJob) for n in queue_names
    ]
    return NarrateWorker(queues, connection=r, serializer=JSONSerializer, job_class=AllowlistedJob)


def run_worker(settings: Settings, burst: bool = False, queue_names: list[str] | None = None,
               log_level: str = "INFO") -> bool:  # fmt: skip
    """Run a worker until stopped (or, with burst, until the queues are empty)."""
    set_runtime(Runtime(settings))
    logging.basicConfig(level=log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    with Connection(settings) as conn:
        worker = make_worker(conn, queue_names or [settings.queue])
        return worker.work(burst=burst, logging_level=log_level, with_scheduler=False)
