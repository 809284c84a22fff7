"""`narrate run` beside a running worker: the job handed to it, followed, and its output put at -o.

When a `narrate worker` holds this process's host lock (worker/process/host.py) and serves this
Redis server (the same home's embedded Valkey, or the same NARRATE_REDIS_URL), `run` would wait for
that worker to stop. Instead the job goes to the worker's queue at high priority (its id is the one
`narrate submit` would give it there, so running the same command again finds it), this process
follows its progress, and once it is finished the output is put at -o: where the worker wrote it
there already (the same output root) nothing is left to do; else the file is copied as
`narrate fetch` copies it (from the disk when this machine sees it, else through Redis from the
writing host's `narrate worker`), checked against its sha256 and renamed into place.

While it follows, it looks at the worker each second (the lock's holder, alive and beating). A
worker whose supervisor lives is restarted by it (its successor requeues the job at start) and is
waited for up to ``RESTART_PATIENCE_S``; once no worker holds the lock, the job is taken out of
the worker's queue (or out of its started registry: its worker is dead) and continues in this
process (inprocess.take_over). A job started by a worker elsewhere that stopped beating goes back to
the front of its queue. Ctrl-C cancels the job (its checkpoints stay)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import redis
from narrate.jobs.api import submit as api
from narrate.jobs.counts import count
from narrate.jobs.errors import BadInput, JobNotFound, NarrateError
from narrate.jobs.fanout import fetch as fetching
from narrate.jobs.fanout.split import HOST_FIELD
from narrate.jobs.outputs import recorded, whereabouts
from narrate.jobs.queue.cancel import cancel
from narrate.jobs.queue.lifecycle import abandoned, requeue_front, take_back
from narrate.jobs.queue.queues import queue_names
from narrate.jobs.server.records import find, queue
from narrate.jobs.settings import Settings
from narrate.jobs.task.context import ProgressListener
from narrate.worker.process.host import Holder, alive, lock_holder, lock_path
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from rq.worker import BaseWorker, Worker

ENDED = ("finished", "failed", "canceled", "stopped")
POLL_S = 0.25  # how often the job's progress is read
LOOK_S = 1.0  # how often the worker's liveness and the job's place in line are looked at
RESTART_PATIENCE_S = 30.0  # a worker whose supervisor lives is started again by it: waited for this long
WORKER_ROLE = "narrate worker"  # what a worker writes beside the lock it holds (worker/process/main.py)

Say = Callable[[str], None]
TakeOver = Callable[[str, str | None], "dict | None"]  # (job id, its gone worker's name) -> final status or None


class Interrupted(NarrateError):
    """Ctrl-C (or SIGTERM) while a handed-off job ran: it was canceled (its checkpoints stay)."""


@dataclass(frozen=True)
class Target:
    """A live `narrate worker` that holds this process's host lock and serves this server."""

    name: str  # rq's name of the worker
    pid: int
    hostname: str
    base: str  # its queue (NARRATE_QUEUE or --queue): it takes NAME-high, NAME, NAME-low
    supervisor: int | None  # the pid of its `narrate worker` supervisor, where its progress file says
    current_job: str | None  # the job it runs now

    @property
    def who(self) -> str:
        return f"worker {self.pid} on {self.hostname}"


def find_worker(settings: Settings, r: redis.Redis) -> Target | None:
    """The `narrate worker` that holds this process's host lock, if it is registered on this server,
    alive (its pid, on this host) and beating; else None."""
    holder = lock_holder(lock_path(settings))
    if holder is None or holder.role != WORKER_ROLE:
        return None
    here, limit = socket.gethostname(), 3 * settings.heartbeat_s + settings.abandoned_grace_s
    for w in Worker.all(connection=r, serializer=JSONSerializer):
        base = _base_queue(w.queue_names())
        if w.pid != holder.pid or w.hostname != here or base is None or not _beat_within(w, limit):
            continue
        theirs = r.hget(w.key, HOST_FIELD)
        if holder.home == Path(settings.home) and isinstance(theirs, bytes) and theirs.decode() != _host_id(settings):
            continue  # a worker of our home has our host id: this one is a same-named host's, with the same pid
        return Target(w.name, w.pid, here, base, _supervisor(holder), w.get_current_job_id())
    return None


def _host_id(settings: Settings) -> str | None:
    """This home's host id (host.host_id keeps it), or None before a worker made one."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        return str(json.loads((settings.home / "host-id").read_text())["id"])
    return None


def _base_queue(names: list[str]) -> str | None:
    """NAME when the worker takes exactly NAME-high, NAME and NAME-low (narrate's worker does)."""
    return next((n for n in names if queue_names(n) == list(names)), None)


def _beat_within(w: BaseWorker, limit: float) -> bool:
    beat = w.last_heartbeat
    if beat is None:
        return False
    beat = beat if beat.tzinfo else beat.replace(tzinfo=UTC)
    return (datetime.now(UTC) - beat).total_seconds() < limit


def _supervisor(holder: Holder) -> int | None:
    """The supervisor of the worker process `holder`: its progress file, ``HOME/worker-PID.progress``,
    names the worker's pid (worker/process/runtime.py)."""
    if holder.home is None:
        return None
    with contextlib.suppress(OSError):
        for f in Path(holder.home).glob("worker-*.progress"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                if int(f.read_text().split()[2]) == holder.pid:
                    return int(f.stem.removeprefix("worker-"))
    return None


def hand_off(
    settings: Settings,
    r: redis.Redis,
    req: api.Request,
    target: Target,
    on_progress: ProgressListener | None,
    say: Say,
    take_over: TakeOver,
) -> dict:
    """Submit the request to `target`'s queue at high priority, follow it to its end and put its
    output at the request's path. Returns the job's final status (its ``output``: the path here)."""
    req = replace(req, options=replace(req.options, fan_out="none", priority="high"))
    out = settings.output_dir.expanduser().resolve() / req.output  # where -o points (api.plan's `final`)
    before = _sha256(out)  # what -o held when the submit accepted it
    job_id = None
    try:
        sub = api.submit(settings, r, req, queue_name=target.base)
        job_id = sub.job.id
        if sub.note:
            say(f"note: {sub.note}")
        if sub.duplicate == "done":
            say(f"identical job {job_id} already done")
        else:
            say(f"handing this job to the running {target.who} (queue {sub.job.origin}); its progress follows")
        st, here = _follow(settings, r, job_id, target, on_progress, say, take_over)
    except KeyboardInterrupt:  # while submitting, too: the job's id is known beforehand
        raise _interrupted(r, job_id or api.plan(settings, req, target.base).job_id) from None
    if st["status"] != "finished" or here:
        return st
    return _place(settings, r, req, st, out, before, say)


def _interrupted(r: redis.Redis, job_id: str) -> Interrupted:
    again = "run the same command again to continue from its checkpoints"
    try:
        said = cancel(r, job_id, asked_by="narrate run (interrupted)")
    except (JobNotFound, BadInput, redis.RedisError):  # never submitted, ended, deleted, or no server
        return Interrupted(f"interrupted; {again}")
    return Interrupted(f"interrupted; job {job_id}, handed to the worker, is {said}; {again}")


def _follow(
    settings: Settings,
    r: redis.Redis,
    job_id: str,
    target: Target,
    on_progress: ProgressListener | None,
    say: Say,
    take_over: TakeOver,
) -> tuple[dict, bool]:
    """Poll the job until it ends: (its final status, whether it ended here after a take-over)."""
    followed, gone_since, looked, told, place = target, None, 0.0, "", None
    while True:
        try:
            st = api.status(r, job_id)
        except JobNotFound:  # rq-dashboard's Delete: its worker stopped it
            raise JobNotFound(f"job {job_id} was deleted while it ran; no output was written") from None
        p = st["progress"]
        if on_progress is not None:
            on_progress(int(p.get("done", 0)), int(p.get("total", 0)), float(p.get("audio_seconds") or 0.0))
        if st["status"] in ENDED:
            return st, False
        now = time.monotonic()
        if now - looked >= LOOK_S:
            looked = now
            live = find_worker(settings, r)
            if live is not None:
                if live.pid != followed.pid:
                    say(f"following the worker's new process {live.pid} on {live.hostname}")
                followed, gone_since, told = live, None, ""
                if st["status"] == "queued":
                    place = _say_place(r, job_id, followed, place, say)
                _requeue_if_abandoned(r, job_id, followed, say)
            else:
                gone_since = now if gone_since is None else gone_since
                restarting = followed.supervisor is not None and alive(followed.supervisor)
                if restarting and now - gone_since < RESTART_PATIENCE_S:
                    told = _once(
                        say,
                        told,
                        f"the {followed.who} stopped; waiting up to {RESTART_PATIENCE_S:.0f} s "
                        f"for its supervisor (pid {followed.supervisor}) to start it again",
                    )
                else:
                    done = take_over(job_id, followed.name)
                    if done is not None:
                        return done, True
                    told = _once(
                        say,
                        told,
                        f"the {followed.who} is gone; this job waits in its queue for the next "
                        "worker, or to continue here once this host's lock is free",
                    )
        time.sleep(POLL_S)


def _once(say: Say, told: str, msg: str) -> str:
    if msg != told:
        say(msg)
    return msg


def _say_place(r: redis.Redis, job_id: str, worker: Target, said: tuple | None, say: Say) -> tuple | None:
    """Say where the queued job stands (the job the worker runs, the jobs ahead) when that changes."""
    job = find(r, job_id)
    if job is None:
        return said
    ahead = 0
    for name in queue_names(worker.base):
        key = queue(r, name).key
        if name == job.origin:
            pos = r.lpos(key, job_id)
            if pos is None:  # being taken now
                return said
            ahead += int(pos)  # type: ignore[arg-type]  # redis-py's LPOS reply
            break
        ahead += int(r.llen(key))
    running = worker.current_job if worker.current_job != job_id else None
    now = (running, ahead)
    if now == said or (running is None and ahead == 0):
        return now
    if running is None:
        say(f"this job starts after {count(ahead, 'queued job')}")
        return now
    other = find(r, running)
    meta = (other.meta if other is not None else None) or {}
    prog = meta.get("progress") or {}
    what = f"{meta.get('document') or '?'}, {prog.get('done', 0)}/{prog.get('total', 0)} sentences"
    after = "it" if ahead == 0 else f"it and {count(ahead, 'other queued job')}"
    say(f"the worker is busy with job {running} ({what}); this job starts after {after}")
    return now


def _requeue_if_abandoned(r: redis.Redis, job_id: str, live: Target, say: Say) -> None:
    """The job was started by another worker (elsewhere, on the same queue) that stopped beating: back
    at the front of its queue, once (lifecycle.take_back), for the live worker to take."""
    job = find(r, job_id)
    if job is None or job.get_status(refresh=False) != JobStatus.STARTED or job.worker_name in (None, live.name):
        return
    gone, _ = abandoned(r, job)
    if gone and take_back(r, job, "crash"):
        say(
            f"the worker that ran this job ({job.worker_name}) stopped beating; it is back at the front of "
            f"queue {job.origin}"
        )


def move_here(r: redis.Redis, job_id: str, into: str, gone_worker: str | None) -> bool:
    """Move the handed-off job into queue `into` (this process's own), atomically: a queued one out of
    its queue; a started one only if `gone_worker`, whose process is gone, ran it, or its worker
    stopped beating (lifecycle.abandoned). Call it holding the host lock. Returns whether it moved."""
    key = Job.key_for(job_id)
    with r.pipeline() as p:
        try:
            p.watch(key)
            job = find(r, job_id)
            if job is None:
                return False
            state, origin = job.get_status(refresh=False), queue(r, job.origin).key
            if state == JobStatus.QUEUED:
                p.watch(origin)
                if r.lpos(origin, job_id) is None:  # claimed by a worker this moment: it is that worker's
                    return False
                p.multi()
                p.lrem(origin, 0, job_id)
                requeue_front(r, job, "claimed", pipeline=p, into=into)
            elif state == JobStatus.STARTED and (job.worker_name == gone_worker or abandoned(r, job)[0]):
                p.multi()
                requeue_front(r, job, "crash", pipeline=p, into=into)
            else:
                return False
            p.execute()
        except redis.WatchError:
            return False
    return True


def _place(
    settings: Settings, r: redis.Redis, req: api.Request, st: dict, out: Path, before: str | None, say: Say
) -> dict:
    """Put the finished job's output at `out` (and the files it wrote beside it, where this machine
    sees them): nothing to do where the worker wrote it there; else copied (fanout.fetch), never over
    a file that changed since the submit accepted `out` (unless --overwrite)."""
    result, job_id = st.get("result") or {}, st["id"]
    want, wrote = str(result.get("output_sha256") or ""), str(result.get("output") or "")
    done = {**st, "output": str(out), "written_by_worker": wrote}
    now = _sha256(out)
    if want and now == want:  # the worker wrote it here (the same output root), or the same bytes are there
        return {**st, "output": str(out)}
    if out.is_dir() or (os.path.lexists(out) and not req.overwrite and now != before):
        raise NarrateError(
            f"{out} changed while the worker narrated, so it was not replaced; the worker wrote the book at "
            f"{wrote}: `narrate fetch {job_id} -o FILE` copies it (--overwrite to replace {out.name})"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    _, how = fetching.fetch(settings, r, job_id, out, overwrite=True)
    job = find(r, job_id)
    host = str((job.meta if job is not None else {}).get("hostname") or "its host")
    via = f"on {host}, copied through Redis" if how == "redis" else "copied from this machine's disk"
    say(f"the worker wrote {wrote} ({via}) to {out}")
    _copy_beside(r, req, result, job_id, out, host if how == "redis" else None, say)
    return done


def _copy_beside(
    r: redis.Redis, req: api.Request, result: dict, job_id: str, out: Path, other_host: str | None, say: Say
) -> None:
    """The subtitles, chapter files and parts the job wrote beside its book, copied beside `out` where
    this machine sees them (checked against their sha256); those of another host are named."""
    root, rel = whereabouts.written_root(result), str(result.get("output_relative") or "")
    files = [f for f in recorded.recorded(r, Path(root), job_id, rel) if f.relative != rel] if root and rel else []
    kept = []
    for f in files:
        dest = out.parent / f.name
        if _sha256(dest) == f.sha256:
            continue
        if os.path.lexists(dest) and not req.overwrite:
            kept.append(f"{dest} (it exists here)")
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            fetching.copy_file(f.path, dest, f.sha256)
        except (OSError, fetching.ChecksumDiffers) as e:
            kept.append(f"{dest} ({e})")
    b = req.book
    if other_host is not None and not files and (b.subtitles or b.split or b.max_part_hours):
        say(
            f"only the book comes through Redis: the files the job wrote beside it stay on {other_host} "
            f"under {root or 'its output root'}"
        )
    if kept:
        say(f"not copied beside {out.name}: {'; '.join(kept)}; the worker's copies are under {root}")


def _sha256(path: Path) -> str | None:
    """The sha256 of a regular file at `path` (links not followed), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        h = hashlib.sha256()
        while block := f.read(1 << 20):
            h.update(block)
        return h.hexdigest()
