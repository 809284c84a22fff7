"""Every use of an rq internal narrate needs, in one module, and the check that fails loudly when an
rq release changes one of them (rq is held to the minor versions tested: 2.12 and 3.0, whose internals listed here
are the same but for the execution 3.0 hands around: ``maintain_heartbeats`` below passes it, and narrate's
``handle_job_failure`` passes on the one rq gave it, narrate.worker.process.rq_worker).

Public rq API is used everywhere else: registries' ``get_job_and_execution_ids``, ``remove_executions``,
``FailedJobRegistry.add``/``remove``, ``Job.set_status``, ``Worker.find_by_key``. What rq 2.12 and 3.0 have no
public way to do:

- put an existing job (back) into its queue, at the front or the end (``Queue._enqueue_job``);
- read a job's callback names before rq imports them (``Job._success_callback_name`` etc.);
- make an existing job wait again for its dependencies (``Job._dependency_ids``,
  ``Job.register_dependency``: a resumed fanned-out book);
- the worker hooks narrate's worker overrides or calls: ``dequeue_job_and_maintain_ttl`` (replaced:
  narrate.worker.process.claiming, with what rq's own calls: ``heartbeat``, ``procline``, ``queue_names``,
  the maintenance tasks, ``max_connection_wait_time``, and ``Job.redis_server_version`` set on the job
  taken), ``execute_job`` (wrapped), ``set_state``, ``request_stop`` and ``request_force_stop`` (with the
  ``_stop_requested`` flag rq's loop reads), ``maintain_heartbeats``, ``handle_job_failure``,
  ``handle_execution_ended``, ``cleanup_execution``, ``handle_exception``, ``handle_payload`` (rq's worker
  commands, read with ``rq.command.parse_payload``) and ``register_birth`` (see
  narrate.worker.process.rq_worker);
- the job hooks narrate's job class overrides: ``func``, ``perform`` and the callback properties.

Instance attributes (set in ``__init__``, so a rename would leave narrate writing a name rq no
longer reads) are checked on a job and a worker built without touching Redis.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from redis import Redis
from redis.client import Pipeline
from rq import Queue
from rq.command import parse_payload
from rq.executions import Execution
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry
from rq.worker import BaseWorker, SimpleWorker

CALLBACK_ATTRIBUTES = ("_success_callback_name", "_failure_callback_name", "_stopped_callback_name")

# "owner.method": parameters narrate passes or relies on.
REQUIRED_METHODS: dict[str, tuple[str, ...]] = {
    "Queue._enqueue_job": ("job", "pipeline", "at_front"),
    "BaseWorker.dequeue_job_and_maintain_ttl": ("timeout", "max_idle_time"),
    "BaseWorker.execute_job": ("job", "queue"),  # overridden (claiming, rq_worker) with these parameters
    "SimpleWorker.execute_job": ("job", "queue"),  # what their super() calls
    "BaseWorker.heartbeat": (),
    "BaseWorker.procline": (),
    "BaseWorker.queue_names": (),
    "BaseWorker.set_state": ("state", "pipeline"),
    "BaseWorker.request_force_stop": ("signum", "frame"),
    "BaseWorker.handle_warm_shutdown_request": (),
    "BaseWorker.run_maintenance_tasks": (),
    "BaseWorker.should_run_maintenance_tasks": (),
    "BaseWorker.get_redis_server_version": (),
    "BaseWorker.maintain_heartbeats": ("job",),
    "BaseWorker.handle_job_failure": ("job", "queue", "started_job_registry", "exc_string"),
    "BaseWorker.handle_execution_ended": ("job", "queue", "heartbeat_ttl"),
    "BaseWorker.cleanup_execution": ("job", "pipeline"),
    "BaseWorker.handle_exception": ("job",),
    "BaseWorker.request_stop": ("signum", "frame"),
    "BaseWorker.handle_payload": ("message",),
    "BaseWorker.register_birth": (),
    "BaseWorker.unsubscribe": (),  # overridden (claiming): its pubsub thread stopped before it leaves the channel
    "Job.func": (),
    "Job.perform": (),  # overridden: refuses a foreign job before rq runs anything
    "Job.success_callback": (),  # overridden properties: narrate jobs have no callbacks
    "Job.failure_callback": (),
    "Job.stopped_callback": (),
    "Job.register_dependency": ("pipeline",),
    "StartedJobRegistry.get_job_and_execution_ids": ("cleanup",),
    "StartedJobRegistry.remove_executions": ("job", "pipeline"),
}
_OWNERS = {
    "Queue": Queue,
    "BaseWorker": BaseWorker,
    "SimpleWorker": SimpleWorker,
    "Job": Job,
    "StartedJobRegistry": StartedJobRegistry,
}
CLASS_ATTRIBUTES = ("BaseWorker.max_connection_wait_time",)  # the longest wait while Redis is away
# Instance attributes set in __init__, read or written by narrate: checked on probe instances.
JOB_ATTRIBUTES = (*CALLBACK_ATTRIBUTES, "_dependency_ids", "redis_server_version")
# Set by rq, read or written by narrate: claiming sets the first two on a stop while taking a job (rq's loop
# and its second-signal handler read them); claiming.unsubscribe stops the pubsub thread itself.
WORKER_ATTRIBUTES = ("_stop_requested", "_shutdown_requested_date", "pubsub", "pubsub_thread")


# A parameter narrate passes wherever rq's signature has it (rq 3.0 hands the execution around; 2.12 keeps it on
# the worker): ``maintain_heartbeats`` below, and narrate's ``handle_job_failure`` passes on what rq gave it.
PASSED_WHERE_TAKEN = frozenset(("execution",))


def _required(signature: Mapping[str, inspect.Parameter]) -> list[str]:
    """The parameters a call must give (no default), but `self`."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [n for n, p in signature.items() if n != "self" and p.kind in kinds and p.default is inspect.Parameter.empty]


class RQInternalsChanged(RuntimeError):
    """The installed rq no longer has what narrate relies on."""


def check_rq_internals() -> None:
    problems = []
    for name, params in REQUIRED_METHODS.items():
        owner, _, attr = name.partition(".")
        obj = getattr(_OWNERS[owner], attr, None)
        if obj is None:
            problems.append(f"{name} is missing")
            continue
        if isinstance(obj, property) or not params:
            continue
        signature = inspect.signature(obj).parameters
        missing = [p for p in params if p not in signature]
        if missing:
            problems.append(f"{name} lacks {missing}")
        unpassed = [p for p in _required(signature) if p not in params and p not in PASSED_WHERE_TAKEN]
        if unpassed:
            problems.append(f"{name} requires {unpassed}, which narrate does not pass")
    for name in CLASS_ATTRIBUTES:
        owner, _, attr = name.partition(".")
        if not hasattr(_OWNERS[owner], attr):
            problems.append(f"{name} is missing")
    probe = Job(connection=Redis())  # no connection is made
    problems += [f"Job.{a} is missing" for a in JOB_ATTRIBUTES if not hasattr(probe, a)]
    try:
        worker = SimpleWorker([], connection=Redis(), prepare_for_work=False)  # no connection is made either
    except Exception as e:  # noqa: BLE001 - a changed constructor is one more thing to report
        problems.append(f"SimpleWorker could not be built to check its attributes ({type(e).__name__}: {e})")
    else:
        problems += [f"SimpleWorker.{a} is missing" for a in WORKER_ATTRIBUTES if not hasattr(worker, a)]
    if not hasattr(Execution, "composite_key"):
        problems.append("Execution.composite_key is missing")
    if problems:
        raise RQInternalsChanged(
            "rq's internals changed; narrate's queue code needs updating (or install the rq version "
            "pyproject.toml pins): " + "; ".join(problems)
        )


_BEAT_TAKES_EXECUTION = "execution" in inspect.signature(BaseWorker.maintain_heartbeats).parameters  # rq 3.0


def maintain_heartbeats(worker: BaseWorker, job: Job) -> None:
    """rq's heartbeat of a running job (the worker's, its execution's and the job's): rq 3.0 is handed the
    execution, rq 2.12 reads the worker's own. Before rq has made the execution there is nothing to beat yet."""
    beat: Any = worker.maintain_heartbeats
    if not _BEAT_TAKES_EXECUTION:
        beat(job)
        return
    execution = worker.execution
    if execution is not None:
        beat(job, execution)


def defer_on(job: Job, dependency_ids: list[str], pipeline: Pipeline) -> None:
    """Make an existing job wait again for `dependency_ids` (a fanned-out book resumed while some of its
    parts are unfinished): rq enqueues it when the last of them finishes. No public API in rq 2.12."""
    job._dependency_ids = list(dependency_ids)
    job.set_status(JobStatus.DEFERRED, pipeline=pipeline)
    job.register_dependency(pipeline=pipeline)


def enqueue_at_front(queue: Queue, job: Job, pipeline: Pipeline) -> None:
    """Put an existing job back at the front of its queue (no public API in rq 2.12)."""
    queue._enqueue_job(job, pipeline=pipeline, at_front=True)


def enqueue_existing(queue: Queue, job: Job, pipeline: Pipeline) -> None:
    """Put an existing job (e.g. a due scheduled one) at the end of its queue."""
    queue._enqueue_job(job, pipeline=pipeline, at_front=False)


def parse_command(message: dict) -> dict:
    """A worker command (stop-job, shutdown, kill-horse) as rq's pubsub delivers it."""
    return parse_payload(message)


def callback_names(job: Job) -> list[str]:
    """The callbacks a job names, read before rq imports them."""
    return [name for a in CALLBACK_ATTRIBUTES if (name := getattr(job, a, None))]


def started_executions(registry: StartedJobRegistry, job_id: str) -> list[str]:
    """The registry members (one per execution) of one job, without running a cleanup."""
    r = registry.connection
    return [
        Execution(execution_id, jid, connection=r).composite_key
        for jid, execution_id in registry.get_job_and_execution_ids(cleanup=False)
        if jid == job_id
    ]


def started_job_ids(registry: StartedJobRegistry) -> list[str]:
    return list(dict.fromkeys(jid for jid, _ in registry.get_job_and_execution_ids(cleanup=False)))
