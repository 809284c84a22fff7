"""narrate's RQ worker: non-forking (models stay warm across jobs), JSON serializer, runs only
narrate's job function (handing it a JobContext), refuses callbacks, beats while a job runs, and
turns a warm stop into a requeue at the front of the queue. Every rq internal it touches is named
in narrate.jobs.rq_compat and checked at start."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

from narrate.jobs import task
from narrate.jobs.api import JOB_FUNCTION
from narrate.jobs.context import JobContext, StopRequested
from narrate.jobs.errors import NarrateError
from narrate.jobs.lifecycle import requeue_front
from narrate.jobs.rq_compat import callback_names
from narrate.jobs.settings import Settings
from redis import Redis
from rq import Queue, SimpleWorker
from rq.job import Job
from rq.serializers import JSONSerializer

log = logging.getLogger("narrate.worker")
FUNCTIONS = {JOB_FUNCTION: task.narrate_job}


class RefusedJob(Exception):
    """A job names a function or callback narrate does not run (a forged or foreign job)."""


class NarrateJob(Job):
    """A job that runs only narrate's own job function, with the context its worker gives it."""

    context: JobContext | None = None

    @property
    def func(self):
        fn = FUNCTIONS.get(self.func_name or "")
        if fn is None:
            raise RefusedJob(f"refusing to run {self.func_name!r}: not a narrate job function")
        if callback_names(self):
            raise RefusedJob(f"refusing callbacks {callback_names(self)}: narrate jobs have none")
        if self.context is None:
            raise RefusedJob("a narrate job needs its worker's context")
        return functools.partial(fn, self.context)

    def perform(self):
        self.func  # noqa: B018 - refuse before rq touches callbacks or runs anything
        return super().perform()

    @property
    def success_callback(self):
        return None

    @property
    def failure_callback(self):
        return None

    @property
    def stopped_callback(self):
        return None


ContextFactory = Callable[[Job], JobContext]


class NarrateWorker(SimpleWorker):
    """SimpleWorker: the job runs in this process, so loaded models survive between jobs."""

    job_class = NarrateJob

    def __init__(self, *args, settings: Settings, make_context: ContextFactory,
                 beat: Callable[[str], None] = lambda _state: None, **kwargs):  # fmt: skip
        super().__init__(*args, **kwargs)
        self.settings = settings
        self.make_context = make_context
        self.beat = beat  # tells the supervisor's hang watchdog: "busy" while a job runs, "idle" after
        self.stop_event = threading.Event()

    def request_stop(self, signum, frame):
        self.stop_event.set()  # the running job stops after its batch in flight
        super().request_stop(signum, frame)

    def execute_job(self, job: Job, queue: Queue):
        ctx = self.make_context(job)
        ctx.stop = self.stop_event
        job.context = ctx  # type: ignore[attr-defined]
        stop = threading.Event()
        beat = threading.Thread(target=self._heartbeats, args=(job, stop), daemon=True)
        beat.start()
        try:
            super().execute_job(job, queue)
        finally:
            stop.set()
            beat.join(timeout=5)
            self.beat("idle")  # waiting for the next job is not a hang

    def _heartbeats(self, job: Job, stop: threading.Event) -> None:
        """RQ's SimpleWorker sends none while a job runs; a long book needs them."""
        while not stop.wait(self.settings.heartbeat_s):
            try:
                self.maintain_heartbeats(job)
            except Exception as e:  # noqa: BLE001 - Redis down: the next beat tries again
                log.warning("heartbeat failed: %s", e)

    def handle_exception(self, job: Job, *exc_info):
        if _stopped_early(job):  # a normal warm stop: one line, no traceback
            log.info("job %s stopped after its batch in flight: %s", job.id, exc_info[1])
            return
        if isinstance(exc_info[1], NarrateError):  # already says what is wrong and what to do: one line
            retry = f" (retries left: {job.retries_left})" if job.retries_left else ""
            log.error("job %s failed%s: %s", job.id, retry, exc_info[1])
            return
        super().handle_exception(job, *exc_info)

    def handle_job_failure(self, job: Job, queue: Queue, started_job_registry=None, exc_string=""):
        if not _stopped_early(job):
            return super().handle_job_failure(job, queue, started_job_registry, exc_string)
        with self.connection.pipeline() as pipeline:  # a warm stop: front of the queue, attempt given back
            self.cleanup_execution(job, pipeline=pipeline)
            requeue_front(self.connection, job, "warm_stop", pipeline=pipeline)
            pipeline.execute()
        log.info("job %s requeued after a warm stop", job.id)


def _stopped_early(job: Job) -> bool:
    ctx = getattr(job, "context", None)
    return ctx is not None and ctx.stopped_early


def make_worker(
    r: Redis,
    queue_names: list[str],
    settings: Settings,
    make_context: ContextFactory,
    beat: Callable[[str], None] = lambda _state: None,
) -> NarrateWorker:
    queues = [Queue(n, connection=r, serializer=JSONSerializer, job_class=NarrateJob) for n in queue_names]
    return NarrateWorker(
        queues,
        connection=r,
        serializer=JSONSerializer,
        job_class=NarrateJob,
        settings=settings,
        make_context=make_context,
        beat=beat,
    )


__all__ = ["NarrateJob", "NarrateWorker", "RefusedJob", "StopRequested", "make_worker"]
