"""The clip watch: a book takes clip jobs along or yields its worker to them. A speech request
(`POST /v1/audio/speech`) or a voice preview must not wait hours behind a book on a host whose one
worker (the host lock) is busy.

While a book or part job from a normal or low priority queue runs, a thread watches the worker's
high-priority queue. It does not poll the queue: it blocks (XREAD BLOCK, a connection of its own)
on the queue's waiting stream (jobs.queue.riding.waiting_key), where each clip job put on the queue
is signalled, and on a stream of its own that wakes it when the book's rider desk opens and when the
watch closes; it reads the queue when woken, when a clip it saw may need a yield, and every
``WATCH_S`` all the same (a clip put back by a path that signals nothing: a recovered claim).
When a clip job (``narrate-clip-...``) has waited there for ``WAITED_S`` (no
idle worker took it: none is idle) and the book has run for NARRATE_CLIP_YIELD_S on this worker,
it sets the job's stop flag: the job ends after its batch in flight exactly as in a warm stop (its
checkpoints kept, the attempt given back) and goes back to the front of its queue; the worker takes
the clips (high priority first), then the book again, which continues from its checkpoints. The
flag is the job's own (``JobContext.stop``), so the worker itself does not stop; a stop of the
worker sets it too.

First, though, a clip job for the model the book has loaded rides along instead: while the book's
engine synthesizes (its ``JobContext.riders`` desk is open), the watch takes the clip job out of the
queue (jobs.queue.riding) and leaves it on the desk; the book's next step puts its line into the
batch ahead of the book's next sentences (worker.engine.admission), and the clip job is finished
from there. The book neither stops nor loses its place. A clip for another model, or one that could
not ride (its voice cannot be made here: it then runs on its own and says why), makes the book
yield as above. NARRATE_CLIP_RIDE 0 turns the riding off, NARRATE_CLIP_YIELD_S 0 the yield."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import cast

from narrate.jobs.api.submit import JOB_FUNCTION
from narrate.jobs.errors import BadInput
from narrate.jobs.fanout.split import PART_FUNCTION
from narrate.jobs.queue import riding
from narrate.jobs.queue.queues import priority_of
from narrate.jobs.server.connection import blocking_client
from narrate.jobs.server.records import find
from narrate.jobs.server.store import PREFIX
from narrate.jobs.task.clip import ClipRider
from narrate.jobs.task.context import JobContext
from narrate.jobs.voices.clips import CLIP_FUNCTION, CLIP_PREFIX, BadClipSpec, ClipSpec
from redis import Redis, RedisError
from rq import Queue
from rq.exceptions import DeserializationError
from rq.job import Job
from rq.worker_registration import get_keys

log = logging.getLogger("narrate.worker")
WATCH_S = 5.0  # a look at the high queue (one LRANGE) at least this often while a book runs, signalled or not
RETRY_S = 1.0  # after a failed read (the server away), the next try
WAKE_KEEP_S = 60
WAITED_S = 0.5  # before a yield: an idle worker takes a job within its dequeue poll (claiming.DEQUEUE_POLL_S)
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

    def __init__(self, r: Redis, high: Queue, ctx: JobContext, worker_name: str):
        self.r, self.high, self.ctx, self.job = r, high, ctx, ctx.job
        self.after_s, self.worker_name = ctx.settings.clip_yield_s, worker_name
        self.started = time.monotonic()
        self.yielded: list[str] = []  # the clips it yielded to
        self.looks = 0  # reads of the queue (tests, the benchmark)
        self._seen: dict[bytes, float] = {}
        self._signal = riding.waiting_key(high.name)
        self._wake = f"{PREFIX}clip-watch:{worker_name}:{self.job.id}"  # this watch's own: desk opened, closed
        self._done = threading.Event()
        ctx.riders.opened = self.wake  # a clip that waits for the desk boards once it opens
        self._thread = threading.Thread(target=self._run, name=f"clip-watch-{self.job.id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        client: Redis | None = None
        last: bytes | str = "0-0"  # the last signal read
        woken: bytes | str = "0-0"  # the last wake-up read
        due = 0.0  # the next look at the queue (monotonic): at once, for clips that waited already
        while not self._done.is_set():
            try:
                if client is None:
                    client = blocking_client(self.ctx.settings, WATCH_S)
                    last = self._newest(client)  # signals after the watch began: the first look reads the queue
                wait = due - time.monotonic()
                if wait > 0:  # until a signal, a wake-up, or the look due
                    got = client.xread({self._signal: last, self._wake: woken}, block=max(1, int(wait * 1000)))
                    for key, entries in cast("list[tuple[bytes, list[tuple[bytes, dict]]]]", got or []):
                        if key.decode() == self._signal:
                            last = entries[-1][0]
                        else:
                            woken = entries[-1][0]
                if self._done.is_set():
                    break
                after = self._look()
                if after is None:  # it yielded
                    break
                due = time.monotonic() + after
            except RedisError as e:  # the server is away: the job's own checks deal with it
                log.debug("clip watch: %s", e)
                if client is not None:
                    client.close()
                    client = None
                self._done.wait(RETRY_S)
                due = 0.0
        if client is not None:
            client.close()

    def _newest(self, client: Redis) -> bytes | str:
        """The id of the last signal so far (the watch reads those after it)."""
        newest = cast("list[tuple[bytes, dict]]", client.xrevrange(self._signal, count=1))
        return newest[0][0] if newest else "0-0"

    def _look(self) -> float | None:
        """Read the queue: take the waiting clips along, or make the book yield to them. Returns the
        seconds until the next look is due unsignalled; None when the book yields (the watch ends)."""
        self.looks += 1
        waiting = self._waiting()
        if not waiting:
            return WATCH_S
        if self._idle_worker():
            return WAITED_S  # it takes them; if it did not, look again
        left = [w for w in waiting if not self._take_along(w.decode())]  # at once: no idle worker
        if not left or self.after_s <= 0:
            return WATCH_S
        now = time.monotonic()
        ready = [w for w in left if now - self._seen.get(w, now) >= WAITED_S]  # a yield costs more: wait
        if ready and now - self.started >= self.after_s:
            self.yielded = [w.decode() for w in ready]
            log.info(
                "job %s yields to %d clip job(s) after its batch in flight: %s",
                self.job.id,
                len(ready),
                ", ".join(self.yielded),
            )
            self.ctx.stop.set()
            return None
        first = min(self._seen.get(w, now) for w in left) + WAITED_S
        return min(WATCH_S, max(0.01, max(first, self.started + self.after_s) - now))

    def wake(self) -> None:
        """Make the watch look at the queue now (its thread blocks on Redis: an entry on its own stream)."""
        try:
            with self.r.pipeline(transaction=False) as p:
                p.xadd(self._wake, {"wake": b""}, maxlen=4, approximate=False)
                p.expire(self._wake, WAKE_KEEP_S)  # a worker killed leaves nothing for long
                p.execute()
        except RedisError as e:
            log.debug("clip watch: could not wake it: %s", e)

    def _take_along(self, job_id: str) -> bool:
        """Take clip job `job_id` along the book's batches; False: it cannot ride (it needs a yield)."""
        desk = self.ctx.riders
        model = desk.model()
        if model is None or job_id in desk.refused or not self.ctx.settings.clip_ride:
            return False
        job = find(self.r, job_id)
        if job is None:  # deleted meanwhile: nothing waits
            return True
        spec = _spec(job)
        if spec is None or self._model_of(spec) != model:
            desk.refused.add(job_id)
            return False
        host = self.ctx.host_id
        if not riding.take(self.r, self.high.key, host, job_id):  # another worker has it now
            return True
        job.meta["host"] = host  # a claimed job of this host: recover_claims puts it back after a crash
        job.save_meta()
        rider = ClipRider(job, spec, self.job.id, self.worker_name, host, desk.refused)
        if not desk.offer(rider):
            rider.give_back("the book's synthesis ended before it could join")
            return False
        log.info("job %s takes clip job %s along its batches", self.job.id, job_id)
        return True

    def _model_of(self, spec: ClipSpec) -> tuple[str, str] | None:
        """(source, quant) the clip asks for, resolved as the worker would load it."""
        from narrate.worker.engine.models import resolve  # mlx: only once a clip waits

        s = self.ctx.settings
        try:
            resolved = resolve(spec.model or s.model, spec.quant or s.quant)
        except BadInput:
            return None
        return resolved.source, resolved.quant

    def _waiting(self) -> list[bytes]:
        """The clip jobs waiting on the high queue (``_seen``: since when this watch has seen each)."""
        now = time.monotonic()
        waiting = cast("list[bytes]", self.r.lrange(self.high.key, 0, 63))  # narrate's clients return bytes
        ids = [i for i in waiting if i.startswith(CLIP_PREFIX.encode())]
        self._seen = {i: self._seen.get(i, now) for i in ids}
        return ids

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
        self.ctx.riders.opened = None
        self.wake()
        self._thread.join(timeout=5)
        try:
            self.r.delete(self._wake)
        except RedisError as e:
            log.debug("clip watch: %s", e)


def _spec(job: Job) -> ClipSpec | None:
    """A clip job's spec; None for anything else (or a payload that cannot be read)."""
    try:
        if job.func_name != CLIP_FUNCTION:
            return None
        return ClipSpec.from_json(job.args[0])
    except (DeserializationError, BadClipSpec, IndexError, TypeError):
        return None


def watch(r: Redis, queues: list[Queue], ctx: JobContext, worker_name: str) -> ClipWatch | None:
    """A watch for a job that yields (None for the others: clips, high-priority books)."""
    high = next((q for q in queues if priority_of(q.name) == "high"), None)
    if high is None or not yields(ctx.job):
        return None
    return ClipWatch(r, high, ctx, worker_name)
