"""The scheduler: every NARRATE_SCHEDULER_INTERVAL_S seconds it (a) moves jobs submitted for later
(`submit --at/--in`) whose time has come into their queue (jobs/queue/due.py) and (b) runs the ticks of
recurring schedules that are due (jobs/schedules/tick.py).

It runs as a thread of the `narrate worker` supervisor (which loads no MLX: the MLX worker process
never runs or forks it) and as its own process, `narrate scheduler`, for hosts without a worker. Any
number may run, on any hosts: each due job is moved once and each tick is run once. It uses no
pickle and none of rq's own scheduler or cron machinery.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
from typing import cast

import redis
from narrate.jobs.fanout.takeover import take_over_parts
from narrate.jobs.queue import queues
from narrate.jobs.queue.due import enqueue_due
from narrate.jobs.schedules import definitions as schedules
from narrate.jobs.schedules.tick import lease_seconds, note_problem, tick_if_due
from narrate.jobs.server.connection import Connection
from narrate.jobs.server.store import PREFIX
from narrate.jobs.settings import Settings

log = logging.getLogger("narrate.scheduler")
SCHEDULERS = f"{PREFIX}schedulers"  # sorted set: "host pid" -> until when it counts as running
MAX_BACKOFF_S = 300.0


def queue_names(settings: Settings, queue_name: str | None = None) -> list[str]:
    """The queues whose due jobs a scheduler moves: the one named (or NARRATE_QUEUE) and its
    priority queues, NAME-high and NAME-low (an empty or missing one costs one read)."""
    return queues.queue_names(queue_name or settings.queue)


def beat(r: redis.Redis, settings: Settings) -> None:
    """Say this scheduler runs (for `narrate schedule list`), for a lease's length."""
    now = time.time()
    with r.pipeline(transaction=False) as p:
        p.zadd(SCHEDULERS, {json.dumps([socket.gethostname(), os.getpid()]): now + lease_seconds(settings)})
        p.zremrangebyscore(SCHEDULERS, "-inf", now)
        p.execute()


def running(r: redis.Redis) -> list[tuple[str, int]]:
    """The schedulers seen lately, as (host, pid)."""
    members = cast("list[bytes]", r.zrangebyscore(SCHEDULERS, time.time(), "+inf"))  # no scores asked: members only
    return [tuple(json.loads(m)) for m in members]


def leave(r: redis.Redis) -> None:
    r.zrem(SCHEDULERS, json.dumps([socket.gethostname(), os.getpid()]))


class Scheduler:
    """One pass at a time (``step``); ``serve`` repeats it until `stop` is set."""

    def __init__(self, settings: Settings, r: redis.Redis, queue_name: str | None = None):
        self.settings = settings
        self.r = r
        self.queues = queue_names(settings, queue_name)
        self.retry_at: dict[str, float] = {}  # schedule -> when to try again after a failed tick
        self.failures: dict[str, int] = {}

    def step(self, stop: threading.Event | None = None) -> None:
        """One pass: due jobs and abandoned parts moved, then the due ticks."""
        self.move()
        self.ticks(stop)

    def move(self) -> None:
        """Due `--at`/`--in` jobs into their queue, and the parts of a book whose host died."""
        beat(self.r, self.settings)
        try:
            moved = enqueue_due(self.r, self.queues)
        except Exception as e:  # noqa: BLE001 - the schedules still get their ticks
            log.error("moving due jobs failed (%s: %s); trying again", type(e).__name__, e)
            moved = []
        if moved:
            log.info("moved %d due job(s) into their queue: %s", len(moved), ", ".join(moved))
        try:
            take_over_parts(self.r, self.queues)  # parts of a book whose host died (jobs/fanout/takeover.py)
        except Exception as e:  # noqa: BLE001 - the next pass tries again
            log.error("taking over abandoned parts failed (%s: %s); trying again", type(e).__name__, e)

    def ticks(self, stop: threading.Event | None = None) -> None:
        """The ticks that are due; a tick that fails is tried again later, with a doubling wait, and
        `schedule list` says why."""
        for sched in schedules.all_schedules(self.r):
            if stop is not None and stop.is_set():
                return
            if time.monotonic() < self.retry_at.get(sched.name, 0.0):
                continue
            try:
                tick_if_due(self.settings, self.r, sched, time.time(), stop)
                self.failures.pop(sched.name, None)
            except Exception as e:  # noqa: BLE001 - one schedule's failure must not stop the others
                n = self.failures[sched.name] = self.failures.get(sched.name, 0) + 1
                wait = min(MAX_BACKOFF_S, self.settings.scheduler_interval_s * 2**n)
                self.retry_at[sched.name] = time.monotonic() + wait
                reason = f"its tick failed ({type(e).__name__}: {e}); trying again in {wait:.0f} s"
                log.error("schedule %s: %s", sched.name, reason)
                with contextlib.suppress(redis.RedisError):
                    note_problem(self.r, sched.name, reason, then=None)

    def serve(self, stop: threading.Event) -> None:
        """Until `stop` is set: due jobs and takeovers in a thread of their own, every interval, so a
        long tick (a big folder, a slow document) never holds them back; the ticks here."""
        every = self.settings.scheduler_interval_s
        log.info("scheduler running (every %g s; queues %s)", every, ", ".join(self.queues))
        mover = threading.Thread(target=self._keep_moving, args=(stop,), name="narrate due jobs", daemon=True)
        mover.start()
        try:
            while not stop.is_set():
                try:
                    self.ticks(stop)
                except Exception as e:  # noqa: BLE001 - a server outage, say: the next pass tries again
                    log.warning("scheduler: %s: %s; trying again", type(e).__name__, e)
                stop.wait(every)
        finally:
            mover.join(timeout=max(5.0, 2 * every))
            try:
                leave(self.r)
            except redis.RedisError:
                pass

    def _keep_moving(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.move()
            except Exception as e:  # noqa: BLE001 - a server outage, say: the next pass tries again
                log.warning("scheduler: %s: %s; trying again", type(e).__name__, e)
            stop.wait(self.settings.scheduler_interval_s)


def serve(settings: Settings, stop: threading.Event, queue_name: str | None = None) -> None:
    """Run a scheduler until `stop` is set (its own process: a server that does not answer at the
    start is an error)."""
    with Connection(settings, patient=True) as conn:
        Scheduler(settings, conn.redis, queue_name).serve(stop)


def start_thread(settings: Settings, queue_name: str | None = None) -> tuple[threading.Thread, threading.Event]:
    """The scheduler as a daemon thread (the worker supervisor's); set the event and join to stop it.
    It waits for a server that does not answer yet (the worker reports that itself)."""
    stop = threading.Event()

    def run() -> None:
        wait = settings.scheduler_interval_s
        while not stop.is_set():
            try:
                serve(settings, stop, queue_name)
            except Exception as e:  # noqa: BLE001 - keep trying while the worker runs
                log.warning("scheduler: %s: %s; trying again in %.0f s", type(e).__name__, e, wait)
                stop.wait(wait)
                wait = min(MAX_BACKOFF_S, wait * 2)

    thread = threading.Thread(target=run, name="narrate scheduler", daemon=True)
    thread.start()
    return thread, stop
