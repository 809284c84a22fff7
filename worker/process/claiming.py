"""Taking a job off the queues without ever losing it: neither to a stop signal nor to kill -9.

rq's worker pops a job id (BLPOP over its queues) and registers the job as started a moment later;
its SIGTERM handler raises in an idle worker, and "idle" lasts until that registration, so a stop
or a kill in between left a job whose hash says "queued" that no queue holds. Here:

- a job is taken with one atomic move onto this host's claim list (narrate.jobs.queue.claims), in
  priority order, polled every ``DEQUEUE_POLL_S`` (a wait for a job is never longer, so a stop is
  seen); the claim goes once the job has ended on this worker, and a worker starting after a kill
  puts back what its predecessor had claimed but never began (``claims.recover_claims``);
- a stop signal while a job is being claimed only sets the flag (rq's handler would raise), and a
  job claimed after a stop goes back to the front of its queue without having begun."""

from __future__ import annotations

import inspect
import logging
import signal
import time
from types import FrameType
from typing import Any

from narrate.jobs.queue import claims
from redis import RedisError
from redis.client import Pipeline
from redis.exceptions import ConnectionError as ServerUnreachable
from rq import Queue, SimpleWorker
from rq.exceptions import NoSuchJobError
from rq.job import Job
from rq.utils import now
from rq.worker import WorkerStatus

log = logging.getLogger("narrate.worker")
DEQUEUE_POLL_S = 0.5  # how often an idle worker looks for a job; a stop is acted on within it
IDLE_RETRY_MAX_S = 8.0  # an idle worker looks again this often while the server is away: back within seconds


class ClaimingWorker(SimpleWorker):
    def __init__(self, *args: Any, host_id: str, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.host_id = host_id
        self._claiming = False  # from looking for a job until it is registered as started

    def request_stop(self, signum: int, frame: FrameType | None) -> None:
        if not self._claiming:
            super().request_stop(signum, frame)
            return
        # rq would raise StopRequested here and drop a job just taken off its queue: only note it.
        self._stop_requested = True
        self._shutdown_requested_date = now()  # rq's second-signal handler reads it (None: a TypeError there)
        self.handle_warm_shutdown_request()
        signal.signal(signal.SIGINT, self.request_force_stop)
        signal.signal(signal.SIGTERM, self.request_force_stop)

    def unsubscribe(self) -> None:
        """rq's, with the wait bounded. rq's pubsub thread waits for a command up to 60 s at a time
        (``get_message(timeout=60)``) and rq leaves the channel before it stops the thread; since
        redis-py 8.2 ``PubSubWorkerThread.stop()`` waits for the thread without a bound, so a thread
        that read the UNSUBSCRIBE reply before it was stopped held a warm stop up to a minute (and a
        second signal meanwhile found rq half stopped). Here the thread is stopped first, then the
        channel left (its reply wakes the thread, which ends), and the thread waited for a second at
        most; with an older redis-py ``stop()`` does not wait at all. A thread stopped just as it read
        a message (its SUBSCRIBE reply) closes the connection as the UNSUBSCRIBE is written: the write
        then fails (a broken pipe), and the channel is left all the same (the server drops a closed
        connection's subscriptions)."""
        thread = self.pubsub_thread
        if thread is None or self.pubsub is None:
            return
        self.log.info("Worker %s: unsubscribing from channel %s", self.name, self.pubsub_channel_name)
        if "timeout" in inspect.signature(thread.stop).parameters:
            thread.stop(timeout=0)
        else:
            thread.stop()
        try:
            self.pubsub.unsubscribe()
        except (RedisError, OSError) as e:  # redis-py's reconnect of the closed connection failed too
            self.log.debug("Worker %s: the channel's connection closed as it was left: %s", self.name, e)
        thread.join(timeout=1)
        self.pubsub.close()

    def dequeue_job_and_maintain_ttl(
        self, timeout: int | None, max_idle_time: int | None = None
    ) -> tuple[Job, Queue] | None:
        """The next job (claimed for this host, its host recorded in it), or None: the queues are
        empty in burst mode (timeout None), idle for max_idle_time, or a stop was asked for."""
        self._claiming = True
        self.set_state(WorkerStatus.IDLE)
        self.procline("Listening on " + ",".join(self.queue_names()))
        by_key = {q.key: q for q in self.queues}
        idle_since = time.monotonic()
        wait_s = 1.0  # before trying again when the server cannot be reached (doubling, at most IDLE_RETRY_MAX_S)
        while not self._stop_requested:
            try:
                self.heartbeat()
                if self.should_run_maintenance_tasks:
                    self.run_maintenance_tasks()
                got = claims.claim_next(self.connection, [q.key for q in self.queues], self.host_id)
            except ServerUnreachable as e:  # as rq's own wait for a job: log, wait, try again
                self.log.error("could not reach the Redis server: %s; trying again in %.0f s", e, wait_s)
                time.sleep(wait_s)
                wait_s = min(wait_s * 2, self.max_connection_wait_time, IDLE_RETRY_MAX_S)
                continue
            wait_s = 1.0
            if got is not None:
                taken = self._claimed(by_key, *got)
                if taken is not None:
                    return taken
                continue
            if timeout is None or (max_idle_time is not None and time.monotonic() - idle_since >= max_idle_time):
                break
            time.sleep(DEQUEUE_POLL_S)
        self._claiming = False
        return None

    def _claimed(self, by_key: dict[str, Queue], queue_key: str, job_id: str) -> tuple[Job, Queue] | None:
        try:
            job = self.job_class.fetch(job_id, connection=self.connection, serializer=self.serializer)
        except NoSuchJobError:  # deleted while queued: rq skips those too
            claims.release(self.connection, self.host_id, job_id)
            return None
        queue = by_key[queue_key] if queue_key else self._left_claimed(by_key, job)
        if queue is None:
            return None
        if self._stop_requested:
            self._give_back(queue, job_id)
            return None
        job.meta["host"] = self.host_id  # from here a started job of this host is recover_abandoned's
        job.save_meta()
        job.redis_server_version = self.get_redis_server_version()
        self.log.info("Worker %s: %s: %s", self.name, queue.name, job.id)
        return job, queue

    def _left_claimed(self, by_key: dict[str, Queue], job: Job) -> Queue | None:
        """A job found on the claim list (the reply to its claim was lost): this worker's to run if it
        still waits (queued, in no queue) in one of its queues; else put back or only unclaimed."""
        origin = Queue(job.origin, connection=self.connection).key
        waiting = claims.never_begun(self.connection, job)
        if waiting and origin in by_key:
            return by_key[origin]
        if waiting:
            claims.give_back(self.connection, origin, self.host_id, job.id)
        else:
            claims.release(self.connection, self.host_id, job.id)
        return None

    def _give_back(self, queue: Queue, job_id: str) -> None:
        claims.give_back(self.connection, queue.key, self.host_id, job_id)
        log.info("job %s put back at the front of its queue: the worker is stopping", job_id)

    def set_state(self, state: str, pipeline: Pipeline | None = None) -> None:
        super().set_state(state, pipeline=pipeline)
        if state == WorkerStatus.BUSY:
            self._claiming = False  # from here rq's own stop handling keeps the job (a warm stop)

    def execute_job(self, job: Job, queue: Queue) -> None:
        if self._stop_requested and self._claiming:  # stopped between the claim and here
            self._claiming = False
            self._give_back(queue, job.id)
            return
        try:
            super().execute_job(job, queue)
        finally:
            try:
                claims.release(self.connection, self.host_id, job.id)
            except RedisError as e:  # the next worker of this host sorts it out (recover_claims)
                log.warning("could not release the claim on job %s: %s", job.id, e)
