"""A book yields its worker to clip jobs: a speech request (`POST /v1/audio/speech`) or a voice
preview must not wait hours behind a book on a host whose one worker (the host lock) is busy.

While a book or part job from a normal or low priority queue runs, a thread watches the worker's
high-priority queue. When a clip job (``narrate-clip-...``) has waited there for ``WAITED_S`` (no
idle worker took it: none is idle) and the book has run for NARRATE_CLIP_YIELD_S on this worker,
it sets the job's stop flag: the job ends after its batch in flight exactly as in a warm stop (its
checkpoints kept, the attempt given back) and goes back to the front of its queue; the worker takes
the clips (high priority first), then the book again, which continues from its checkpoints. The
flag is the job's own (``JobContext.stop``), so the worker itself does not stop; a stop of the
worker sets it too."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta

from narrate.jobs.api.submit import JOB_FUNCTION
from narrate.jobs.fanout.split import PART_FUNCTION
from narrate.jobs.queue.queues import priority_of
from redis import Redis, RedisError
from rq import Queue
from rq.exceptions import DeserializationError
from rq.job import Job
from rq.worker_registration import get_keys

log = logging.getLogger("narrate.worker")
CLIP_PREFIX = b"narrate-clip-"
POLL_S = 0.25
WAITED_S = 0.5  # an idle worker takes a job within its dequeue poll (claiming.DEQUEUE_POLL_S)
LIVE = timedelta(seconds=30)  # an idle worker beats every dequeue poll: one silent longer is gone


def _when(raw: bytes) -> datetime:
    try:
        t = datetime.fromisoformat(raw.decode().replace("Z", "+00:00"))
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def yields(job: Job) -> bool:
    """Books and their parts from a normal or low priority queue yield; clips never do, nor a job
    whose payload cannot be read (forged, pickled: the worker refuses it when it runs it)."""
    try:
        name = job.func_name
    except DeserializationError:
        return False
    return name in (JOB_FUNCTION, PART_FUNCTION) and priority_of(job.origin or "") != "high"


class ClipWatch:
    """The watching thread of one running job (``close`` when the job ends)."""

    def __init__(self, r: Redis, high: Queue, job: Job, stop: threading.Event, after_s: float, worker_name: str):
        self.r, self.high, self.job, self.stop = r, high, job, stop
        self.after_s, self.worker_name = after_s, worker_name
        self.started = time.monotonic()
        self.yielded: list[str] = []  # the clips it yielded to
        self._seen: dict[bytes, float] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"clip-watch-{job.id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(POLL_S):
            try:
                waiting = self._waiting()
            except RedisError as e:  # the server is away: the job's own checks deal with it
                log.debug("clip watch: %s", e)
                continue
            if waiting and time.monotonic() - self.started >= self.after_s and not self._idle_worker():
                self.yielded = [w.decode() for w in waiting]
                log.info("job %s yields to %d clip job(s) after its batch in flight: %s", self.job.id,
                         len(waiting), ", ".join(self.yielded))  # fmt: skip
                self.stop.set()
                return

    def _waiting(self) -> list[bytes]:
        """The clip jobs that have waited on the high queue for WAITED_S."""
        now = time.monotonic()
        ids = [i for i in self.r.lrange(self.high.key, 0, 63) if i.startswith(CLIP_PREFIX)]
        self._seen = {i: self._seen.get(i, now) for i in ids}
        return [i for i, since in self._seen.items() if now - since >= WAITED_S]

    def _idle_worker(self) -> bool:
        """Another worker of the high queue is idle (it will take the clip: no need to yield)."""
        keys = [k for k in get_keys(queue=self.high) if not k.endswith(f":{self.worker_name}")]
        with self.r.pipeline(transaction=False) as p:
            for key in keys:
                p.hmget(key, ["state", "last_heartbeat"])
            found = p.execute()
        now = datetime.now(UTC)
        return any(state == b"idle" and beat and now - _when(beat) < LIVE for state, beat in found)

    def close(self) -> None:
        self._done.set()
        self._thread.join(timeout=5)


def watch(r: Redis, queues: list[Queue], job: Job, stop: threading.Event, after_s: float,
          worker_name: str) -> ClipWatch | None:  # fmt: skip
    """A watch for a job that yields (None for the others, or when NARRATE_CLIP_YIELD_S is 0)."""
    high = next((q for q in queues if priority_of(q.name) == "high"), None)
    if after_s <= 0 or high is None or not yields(job):
        return None
    return ClipWatch(r, high, job, stop, after_s, worker_name)
