"""narrate's RQ worker: non-forking (models stay warm across jobs), JSON serializer, runs only
narrate's job function (handing it a JobContext), refuses callbacks, beats while a job runs, and
turns a warm stop into a requeue at the front of the queue, and a canceled or deleted job into a
job that ended for good (canceled, or gone without a trace). Every rq internal it touches is named
in narrate.jobs.queue.rq_compat and checked at start.

rq's stop-job command (``send_stop_job_command``) would, on a plain SimpleWorker, mark the job to be
recorded as "stopped" and kill a work horse that a SimpleWorker does not have: the job ran on to
its end. Here it cancels the job like ``narrate cancel``: it stops within a second.

Taking a job (atomically, for this host) and stop signals while taking one: worker.process.claiming."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from narrate.jobs.api.submit import JOB_FUNCTION
from narrate.jobs.errors import NarrateError
from narrate.jobs.fanout.split import HOST_FIELD, PART_FUNCTION
from narrate.jobs.queue.lifecycle import CANCEL_FIELD, mark_canceled, requeue_front
from narrate.jobs.queue.rq_compat import callback_names, maintain_heartbeats, parse_command
from narrate.jobs.settings import Settings
from narrate.jobs.task import job as task
from narrate.jobs.task import part as parts
from narrate.jobs.task.clip import clip_job
from narrate.jobs.task.context import JobContext, StopRequested
from narrate.jobs.voices.clips import CLIP_FUNCTION
from narrate.worker import blas
from narrate.worker.process import clip_watch
from narrate.worker.process.claiming import ClaimingWorker
from redis import Redis, RedisError
from redis.typing import EncodableT, FieldT
from rq import Queue
from rq.job import Job
from rq.registry import StartedJobRegistry
from rq.serializers import JSONSerializer

log = logging.getLogger("narrate.worker")
FUNCTIONS: dict[str, Callable[..., Any]] = {
    JOB_FUNCTION: task.narrate_job,
    PART_FUNCTION: parts.part_job,
    CLIP_FUNCTION: clip_job,
}


class RefusedJob(Exception):
    """A job names a function or callback narrate does not run (a forged or foreign job)."""


class NarrateJob(Job):
    """A job that runs only narrate's own job function, with the context its worker gives it."""

    context: JobContext | None = None

    @property
    def func(self) -> Callable[..., Any]:
        fn = FUNCTIONS.get(self.func_name or "")
        if fn is None:
            raise RefusedJob(f"refusing to run {self.func_name!r}: not a narrate job function")
        if callback_names(self):
            raise RefusedJob(f"refusing callbacks {callback_names(self)}: narrate jobs have none")
        if self.context is None:
            raise RefusedJob("a narrate job needs its worker's context")
        return functools.partial(fn, self.context)

    def perform(self) -> Any:
        self.func  # noqa: B018 - refuse before rq touches callbacks or runs anything
        return super().perform()

    @property
    def success_callback(self) -> None:
        return None

    @property
    def failure_callback(self) -> None:
        return None

    @property
    def stopped_callback(self) -> None:
        return None


ContextFactory = Callable[[Job], JobContext]


class NarrateWorker(ClaimingWorker):
    """SimpleWorker: the job runs in this process, so loaded models survive between jobs."""

    job_class = NarrateJob

    def __init__(
        self,
        *args: Any,
        settings: Settings,
        make_context: ContextFactory,
        beat: Callable[[str], None] = lambda _state: None,
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)  # host_id: ClaimingWorker's; in the worker's hash, fan-out counts hosts
        self.settings = settings
        self.make_context = make_context
        self.beat = beat  # tells the supervisor's hang watchdog: "busy" while a job runs, "idle" after
        self.stop_event = threading.Event()
        self._stop_signalled = False
        self.context: JobContext | None = None  # of the job running now
        self.log_failures = True  # False (`narrate run`): the caller prints the job's error from its status

    def register_birth(self, *args: Any, **kwargs: Any) -> None:
        super().register_birth(*args, **kwargs)
        fields: dict[FieldT, EncodableT] = {
            "narrate_model": self.settings.model,  # `narrate info`
            "narrate_blas": blas.in_use(),
            HOST_FIELD: self.host_id,  # fan-out
        }
        self.connection.hset(self.key, mapping=fields)

    def handle_payload(self, message: dict[str, Any]) -> Any:
        """rq's worker commands: stop-job cancels the running job (see the module docstring)."""
        payload = parse_command(message)
        if payload.get("command") != "stop-job":
            return super().handle_payload(message)
        ctx, job_id = self.context, payload.get("job_id")
        if ctx is None or ctx.job.id != job_id:
            log.info("stop-job command for %s ignored: not running it", job_id)
            return None
        ctx.cancel.set()  # honoured at the next chunk (`narrate cancel`: within a second)
        try:
            self.connection.hset(ctx.job.key, CANCEL_FIELD, "stop-job command")
        except RedisError as e:
            log.warning("could not record the stop-job command for %s: %s", job_id, e)
        log.info("job %s will stop within a second (stop-job command)", job_id)
        return None

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        # A stop of the whole process group reaches this process twice (directly, and passed on by the
        # supervisor): the second signal can come while this handler holds the stop event's lock,
        # and setting it again there deadlocked the worker. The first signal does everything.
        if self._stop_signalled:
            return
        self._stop_signalled = True
        self.stop_event.set()  # the running job stops after its batch in flight
        ctx = self.context
        if ctx is not None:
            ctx.stop.set()  # its own flag (worker.process.clip_watch sets it too)
        super().request_stop(signum, frame)

    def execute_job(self, job: Job, queue: Queue) -> None:
        ctx = self.make_context(job)
        ctx.stop = threading.Event()  # the job's own: set by a stop of the worker, or to yield to clip jobs
        job.context = ctx  # type: ignore[attr-defined]
        self.context = ctx
        if self.stop_event.is_set():
            ctx.stop.set()
        clips = clip_watch.watch(self.connection, self.queues, ctx, self.name)
        stop = threading.Event()
        beat = threading.Thread(target=self._heartbeats, args=(job, stop), daemon=True)
        beat.start()
        try:
            super().execute_job(job, queue)
        finally:
            stop.set()
            beat.join(timeout=5)
            if clips is not None:
                clips.close()
            self.context = None
            if ctx.canceled == "deleted":
                self._forget(job)
            self.beat("idle")  # waiting for the next job is not a hang

    def _forget(self, job: Job) -> None:
        """A deleted job stays deleted: rq's end-of-job bookkeeping and our last progress save may
        have written a few fields of its hash again (a record without a status is only debris)."""
        try:
            if self.connection.hget(job.key, "status") is None:
                self.connection.delete(job.key)
        except RedisError as e:
            log.warning("could not remove what is left of deleted job %s: %s", job.id, e)

    def _heartbeats(self, job: Job, stop: threading.Event) -> None:
        """RQ's SimpleWorker sends none while a job runs; a long book needs them."""
        while not stop.wait(self.settings.heartbeat_s):
            try:
                maintain_heartbeats(self, job)
            except Exception as e:  # noqa: BLE001 - Redis down: the next beat tries again
                log.warning("heartbeat failed: %s", e)

    def handle_exception(self, job: Job, *exc_info: Any) -> None:
        if _stopped_early(job) or _canceled(job):  # a normal warm stop or a cancel: one line, no traceback
            log.info("job %s stopped after its batch in flight: %s", job.id, exc_info[1])
            return
        if isinstance(exc_info[1], NarrateError):  # already says what is wrong and what to do: one line
            retry = f" (retries left: {job.retries_left})" if job.retries_left else ""
            log.log(
                logging.ERROR if self.log_failures else logging.DEBUG, "job %s failed%s: %s", job.id, retry, exc_info[1]
            )
            return
        super().handle_exception(job, *exc_info)

    def handle_execution_ended(self, job: Job, queue: Queue, heartbeat_ttl: int) -> None:
        if _canceled(job) == "taken":  # its record is another worker's: no end time or beat of ours in it
            return
        super().handle_execution_ended(job, queue, heartbeat_ttl)

    def handle_job_failure(
        self,
        job: Job,
        queue: Queue,
        started_job_registry: StartedJobRegistry | None = None,
        exc_string: str = "",
        execution: Any = None,
    ) -> None:
        reason = _canceled(job)
        # rq 3.0 names the execution that ended, for cleanup_execution; rq 2.12 gives none (the worker's own)
        ended = {"execution": execution} if execution is not None else {}
        if reason == "taken":  # another worker has it now: only this worker's execution ends
            with self.connection.pipeline() as pipeline:
                self.cleanup_execution(job, pipeline=pipeline, **ended)
                pipeline.execute()
            log.warning(
                "job %s was judged abandoned while this worker was away (asleep, or cut off from "
                "Redis) and is another worker's now: stopped after its batch in flight",
                job.id,
            )
            return None
        if reason is not None:  # canceled or deleted: it ended for good, checkpoints kept
            with self.connection.pipeline() as pipeline:
                self.cleanup_execution(job, pipeline=pipeline, **ended)
                if reason == "deleted":
                    pipeline.delete(job.key)
                else:
                    mark_canceled(self.connection, job, pipeline)
                pipeline.execute()
            log.info("job %s %s", job.id, reason)
            return None
        if not _stopped_early(job):
            super().handle_job_failure(job, queue, started_job_registry, exc_string, **ended)
            return
        with self.connection.pipeline() as pipeline:  # a warm stop: front of the queue, attempt given back
            self.cleanup_execution(job, pipeline=pipeline, **ended)
            requeue_front(self.connection, job, "warm_stop", pipeline=pipeline)
            pipeline.execute()
        why = "a warm stop" if self.stop_event.is_set() else "yielding to clip jobs (it continues after them)"
        log.info("job %s requeued after %s", job.id, why)


def _stopped_early(job: Job) -> bool:
    ctx = getattr(job, "context", None)
    return ctx is not None and ctx.stopped_early


def _canceled(job: Job) -> str | None:
    ctx = getattr(job, "context", None)
    return ctx.canceled if ctx is not None else None


def make_worker(
    r: Redis,
    queue_names: list[str],
    settings: Settings,
    make_context: ContextFactory,
    host_id: str,
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
        host_id=host_id,
        beat=beat,
    )


__all__ = ["NarrateJob", "NarrateWorker", "RefusedJob", "StopRequested", "make_worker"]
