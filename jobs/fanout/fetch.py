"""`narrate fetch JOB -o FILE`: a finished job's output, copied to this host. Where the output is here
(the path the job wrote exists with the checksum it recorded), it is copied from the disk; else it
comes through Redis from the host that wrote it: a request on that host's list, answered by the
thread its `narrate worker` supervisor runs, which streams the file in chunks into a reply list that
never holds more than a few chunks (it waits while the reader is behind). The copy is written to a
temp file beside FILE, checked against the recorded sha256 and renamed: never a truncated FILE.

Capped by ``NARRATE_FETCH_MAX_MB``; the reply expires after an hour."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import redis
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.outputs import confined, whereabouts
from narrate.jobs.server.records import fetch as fetch_job
from narrate.jobs.settings import Settings
from rq.job import JobStatus

log = logging.getLogger("narrate.jobs")
CHUNK = 1 << 20  # bytes a reply message holds
AHEAD = 8  # chunks the server may put in the reply list before the reader takes them
REPLY_TTL_S = 3600
ANSWER_WAIT_S = 30.0  # how long `fetch` waits for the output's host to answer


class ChecksumDiffers(NarrateError):
    """A copy is not what the job wrote."""


def requests_key(host: str) -> str:
    return f"narrate:fetch-requests:{host}"


def destination(dest: str | Path, name: str, overwrite: bool = False) -> Path:
    """Where the copy goes, checked before anything is asked of another host: a file in a folder
    that exists (a folder given: the output's own name in it); an existing file only with
    `overwrite`. Raises BadInput saying what to give instead."""
    if not str(dest).strip():
        raise BadInput("-o is empty: give the file (or folder) to write the output to")
    path = Path(dest).expanduser().absolute()
    if path.is_dir():
        path = path / name
    if not path.parent.is_dir():
        raise BadInput(f"-o {dest}: folder {path.parent} does not exist; create it or give another")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise BadInput(f"-o {dest}: folder {path.parent} cannot be written to")
    if path.is_dir() or (os.path.lexists(path) and not overwrite):
        what = "a folder" if path.is_dir() else "a file"
        raise BadInput(f"-o {dest}: {path} is {what} already; give another name, or pass --overwrite to replace it")
    return path


def fetch(
    settings: Settings, r: redis.Redis, job_id: str, dest: str | Path, via_redis: bool = False, overwrite: bool = False
) -> tuple[Path, str]:
    """Copy job `job_id`'s output to `dest` (see ``destination``); returns where it went and how:
    "local" (from this host's disk) or "redis". `via_redis`: even when the file is visible here (a
    shared output directory, or a check of the Redis path)."""
    job = fetch_job(r, job_id)
    state = job.get_status(refresh=False)
    if state != JobStatus.FINISHED:  # `narrate fetch` says more first (jobs.api.unfinished)
        raise BadInput(
            f"job {job_id} has not finished (it is {state.value if state else 'unknown'}); fetch it once it has"
        )
    result = job.return_value(refresh=True) or {}
    path, want = Path(result.get("output", "")), result.get("output_sha256", "")
    dest = destination(dest, path.name or f"{job_id}.audio", overwrite)
    if not via_redis and want and path.is_file():  # visible here: copied (and checked) from the disk
        with contextlib.suppress(OSError, ChecksumDiffers):  # else (not what the job wrote) from its host
            _write(dest, _file_chunks(path), want)
            return dest, "local"
    meta = job.meta or {}
    if not via_redis and meta.get("hostname") == socket.gethostname() and meta.get("host") == _host_id(settings):
        # written here, by a worker of this home (host names alone may repeat): no other host has it
        why = whereabouts.diagnose(
            job_id, result, meta, whereabouts.written_root(result) or settings.output_dir, changed=path.is_file()
        )
        raise NarrateError(why.message)
    host = meta.get("host")
    if not host:
        raise NarrateError(f"job {job_id} does not say which host wrote its output")
    reply = f"narrate:fetch-reply:{uuid.uuid4().hex}"
    with r.pipeline() as p:
        p.rpush(requests_key(host), json.dumps({"job": job_id, "reply": reply}))
        p.expire(requests_key(host), REPLY_TTL_S)
        p.execute()
    first = r.blpop([reply], timeout=ANSWER_WAIT_S)
    if first is None:
        raise NarrateError(
            f"host {meta.get('hostname') or '?'}, which wrote {path.name} (host id {host[:12]}), did not answer "
            f"within {ANSWER_WAIT_S:.0f} s: is a `narrate worker` running there?"
        )
    head = json.loads(first[1])
    if "error" in head:
        raise NarrateError(head["error"])

    def chunks() -> Iterator[bytes]:
        while True:
            got = r.blpop([reply], timeout=ANSWER_WAIT_S)
            if got is None:
                raise NarrateError(f"the copy of {path.name} stopped coming (its host went away?); try again")
            assert isinstance(got[1], bytes)  # narrate's clients return bytes (decode_responses off)
            if got[1] == b"":
                return
            yield got[1]

    try:
        _write(dest, chunks(), want)
    finally:
        r.delete(reply)
    return dest, "redis"


def copy_file(path: Path, dest: Path, want: str) -> None:
    """Copy a file of this machine to `dest` as `fetch` does: a temp file beside it, checked against
    `want` (its sha256), renamed into place (`narrate run`'s hand-off copies the files beside a book)."""
    _write(dest, _file_chunks(path), want)


def _host_id(settings: Settings) -> str | None:
    """This home's host id (worker/process/host.py keeps it), or None before a worker made one."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        return str(json.loads((settings.home / "host-id").read_text())["id"])
    return None


def _write(dest: Path, chunks: Iterable[bytes], want: str) -> None:
    dest = Path(dest).expanduser().absolute()
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                digest.update(chunk)
                f.write(chunk)
        if want and digest.hexdigest() != want:
            raise ChecksumDiffers(
                "the copy does not match the output's recorded checksum (was it changed?); nothing written"
            )
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _file_chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            yield chunk


def serve(settings: Settings, r: redis.Redis, host: str, stop: threading.Event) -> None:
    """Answer this host's fetch requests until `stop` is set (the worker supervisor's thread). The same
    error again (a server refusing every write refuses each BLPOP) is logged once, not every second."""
    said = ""
    while not stop.is_set():
        try:
            got = r.blpop([requests_key(host)], timeout=1)
            said = ""
            if got is not None:
                ask = json.loads(got[1])
                threading.Thread(target=answer, args=(settings, r, ask["job"], ask["reply"], stop), daemon=True).start()
        except (redis.RedisError, ValueError, KeyError) as e:
            now = f"{type(e).__name__}: {e}"
            if now != said:
                log.warning("fetch requests: %s (trying again each second; said again only if it changes)", now)
                said = now
            stop.wait(1)


def answer(settings: Settings, r: redis.Redis, job_id: str, reply: str, stop: threading.Event) -> None:
    """Stream one output into `reply`: a JSON head (size, or the error), the chunks, then b""."""
    try:
        result = fetch_job(r, job_id).return_value(refresh=True) or {}
        fd = _open_output(settings, Path(result["output"]), str(result.get("output_sha256", "")))
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            cap = int(settings.fetch_max_mb * 1e6)
            if size > cap:
                name, limit = Path(result["output"]).name, settings.fetch_max_mb
                raise NarrateError(
                    f"{name} is {size / 1e6:.0f} MB, more than NARRATE_FETCH_MAX_MB={limit:g} lets through Redis: "
                    "copy it from its host, or raise the cap on both hosts"
                )
            _push(r, reply, json.dumps({"size": size}).encode())
            while chunk := f.read(CHUNK):
                while r.llen(reply) >= AHEAD and not stop.is_set():
                    time.sleep(0.02)  # the reader is behind: Redis holds at most AHEAD chunks
                _push(r, reply, chunk)
        _push(r, reply, b"")
    except (OSError, KeyError, NarrateError) as e:
        why = e if isinstance(e, NarrateError) else f"the output is not on its host any more ({e})"
        _push(r, reply, json.dumps({"error": str(why)}).encode())
    except redis.RedisError as e:
        log.warning("fetch of %s: %s", job_id, e)


def _open_output(settings: Settings, path: Path, want: str) -> int:
    """A read descriptor of a job's output, refused unless it is a regular file under this host's
    output root (reached without following links) whose content has the sha256 the job recorded:
    anyone who can write to Redis can forge a job's result, and must not get other files sent."""
    root = confined.OutputRoot.pin(settings.output_dir)
    if not path.is_absolute() or not path.is_relative_to(root.path) or path == root.path:
        raise NarrateError(f"refusing to send {path}: it is not under this host's output root")
    rel = path.relative_to(root.path)
    dir_fd = confined.open_dir(root, rel.parts[:-1], create=False)
    try:
        fd = os.open(rel.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NarrateError(f"refusing to send {path}: not a regular file")
        h = hashlib.sha256()
        while chunk := os.read(fd, CHUNK):
            h.update(chunk)
        if not want or h.hexdigest() != want:
            raise NarrateError(f"refusing to send {path}: it is not what the job wrote (its checksum differs)")
        os.lseek(fd, 0, os.SEEK_SET)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _push(r: redis.Redis, key: str, value: bytes) -> None:
    with r.pipeline() as p:
        p.rpush(key, value)
        p.expire(key, REPLY_TTL_S)
        p.execute()


def start_thread(settings: Settings, host: str, stop: threading.Event) -> threading.Thread:
    """`serve` as a daemon thread of the worker supervisor; it stops with `stop`."""
    from narrate.jobs.server.connection import Connection

    def run() -> None:
        while not stop.is_set():
            try:
                with Connection(settings, patient=True) as conn:
                    serve(settings, conn.redis, host, stop)
            except Exception as e:  # noqa: BLE001 - keep answering while the worker runs
                log.warning("fetch requests: %s: %s; trying again", type(e).__name__, e)
                stop.wait(5)

    thread = threading.Thread(target=run, name="narrate-fetch", daemon=True)
    thread.start()
    return thread
