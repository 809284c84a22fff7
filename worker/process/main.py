"""The worker process (run by the supervisor, narrate.worker.process.supervisor): checks the rq and
mlx-audio internals narrate relies on, holds the host lock from start to exit, requeues the
jobs its host abandoned (a crashed predecessor's), then works the queue.

Holding the host lock for its whole life means that when it starts, no other worker of this host
is alive, so every "started" job of this host is abandoned and is requeued at once (or failed,
after ``max_attempts`` crashes) instead of waiting for rq's job timeout + 60 s + a maintenance pass.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from pathlib import Path

import redis
from narrate.jobs.book.checkpoints import CheckpointStore
from narrate.jobs.errors import NarrateError
from narrate.jobs.outputs import scratch
from narrate.jobs.queue.claims import recover_claims
from narrate.jobs.queue.lifecycle import recover_abandoned
from narrate.jobs.queue.queues import queue_names
from narrate.jobs.queue.rq_compat import check_rq_internals
from narrate.jobs.queue.runs import sweep_dead_runs
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings
from narrate.jobs.task import job as task
from narrate.worker.process.host import alive, host_lock, lock_path
from narrate.worker.process.parent import die_with_parent
from narrate.worker.process.refusals import EXIT_NAME, REDIS_REFUSES, refused_write
from narrate.worker.process.rq_worker import make_worker
from narrate.worker.process.runtime import WorkerRuntime

log = logging.getLogger("narrate.worker")


def run_worker(
    settings: Settings,
    burst: bool = False,
    queue_name: str | None = None,
    log_level: str = "INFO",
    progress_file: Path | None = None,
    previous_exit: str = "",
) -> bool:
    """Run a worker until stopped (or, with burst, until its queues are empty). It takes the queue's
    high, normal and low priority queues, in that order."""
    logging.basicConfig(level=log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    check_rq_internals()
    task.preload()
    rt = WorkerRuntime(settings, progress_file=progress_file)
    if progress_file is not None:  # supervised: die with the supervisor, tell it about progress
        die_with_parent()
        rt.beat("idle")
    CheckpointStore(settings.home / "checkpoints").sweep_temp()
    scratch.sweep(settings.home / "stitch")  # what a killed predecessor was stitching
    with (
        host_lock(lock_path(settings), "narrate worker", home=settings.home),
        Connection(settings, patient=True) as conn,
    ):
        names = queue_names(queue_name or settings.queue)
        worker = make_worker(conn.redis, names, settings, rt.make_context, rt.host_id, rt.beat)
        recover_claims(conn.redis, rt.host_id)  # taken by the last worker of this host, never begun
        sweep_dead_runs(conn.redis, rt.host_id, alive)  # what a killed `narrate run` of this host left
        crashed_from_inside = previous_exit not in ("", "signal SIGKILL", "hang after wake", EXIT_NAME)
        for q in worker.queues:
            recover_abandoned(conn.redis, q, rt.host_id, settings.max_attempts, crashed_from_inside)
        rt.beat("idle")
        return worker.work(burst=burst, logging_level=log_level, with_scheduler=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="narrate-worker-process")
    ap.add_argument("--queue", default=None)
    ap.add_argument("--burst", action="store_true")
    ap.add_argument("--log-level", default="INFO")
    ap.add_argument("--progress-file", type=Path, default=None, help="liveness file the supervisor watches")
    ap.add_argument("--previous-exit", default="", help="how the previous worker process ended")
    args = ap.parse_args(argv)
    try:
        run_worker(
            Settings.from_env(),
            burst=args.burst,
            queue_name=args.queue,
            log_level=args.log_level,
            progress_file=args.progress_file,
            previous_exit=args.previous_exit,
        )
    except NarrateError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 2  # a configuration error: the supervisor does not restart
    except redis.RedisError as e:
        answer = refused_write(e)
        if answer is None:
            raise
        print(f"Error: the Redis server refused a write: {answer}", file=sys.stderr)
        return REDIS_REFUSES  # the supervisor waits until it accepts them (worker/process/refusals.py)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
