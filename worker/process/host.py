"""The host: its identity (unique per machine, stable across restarts) and its lock (one
synthesizing worker per host; a kernel lock, released even on SIGKILL).

Identity: a random id kept in ``$NARRATE_HOME/host-id`` together with the operating system's
machine id (Linux ``/etc/machine-id``, macOS ``IOPlatformUUID``); a home copied to another
machine (a cloned VM, a restored backup) sees a different machine id and makes a new one. Host
names are not used: two machines may share one.

Lock: ``flock`` on a file opened without following symlinks (a link planted at the lock path is
refused, never written through); the holder's PID, role and home are written beside it so a waiting
process can say whom it waits for, and `narrate run` can tell a running worker, which it hands its
job to (``lock_holder``; worker/process/handoff.py), from anything else. ``host_lock_if_free`` takes
it only if nobody holds it. Works the same on macOS and Linux.

Its scope, unless ``NARRATE_LOCK_PATH`` names the file: the accelerator. On Metal (an Apple
silicon Mac) or an NVIDIA GPU every home of the machine shares ``$TMPDIR/narrate-host.lock``, so
two workers never share the GPU; on a machine with only CPUs each home has its own
(``$NARRATE_HOME/host.lock``), so unrelated homes do not wait for each other (the host id, which
start-up recovery compares, is per home too).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import platform
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from narrate.jobs.errors import BadInput
from narrate.jobs.settings import Settings

log = logging.getLogger("narrate.worker")


def machine_id() -> str:
    """The OS's id of this machine, or "" when it has none we can read."""
    if sys.platform == "darwin":
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                ["ioreg", "-rd1", "-c", "IOPlatformExpertDevice"], capture_output=True, text=True, timeout=5
            ).stdout
            for line in out.splitlines():
                if "IOPlatformUUID" in line:
                    return line.split("=")[-1].strip().strip('"')
        return ""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            value = Path(path).read_text().strip()
            if value:
                return value
    return ""


def host_id(home: Path) -> str:
    """This host's identity, made once and kept in `home`."""
    path = Path(home) / "host-id"
    machine = machine_id()
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        saved = json.loads(path.read_text())
        if saved["machine"] == machine:
            return str(saved["id"])
    new = uuid.uuid4().hex
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".host-id.{os.getpid()}")
    tmp.write_text(json.dumps({"id": new, "machine": machine}))
    os.replace(tmp, path)
    return new


def accelerator() -> str:
    """What the worker synthesizes on, as far as the lock cares: "metal", "cuda" or "cpu"."""
    if sys.platform == "darwin" and platform.machine() == "arm64":
        return "metal"
    if os.path.exists("/dev/nvidiactl"):
        return "cuda"
    return "cpu"


def lock_path(settings: Settings) -> Path:
    """The host lock file: NARRATE_LOCK_PATH when set, else one per accelerator (module docstring)."""
    if os.environ.get("NARRATE_LOCK_PATH", "").strip():
        return Path(settings.lock_path)
    return Path(settings.lock_path) if accelerator() != "cpu" else Path(settings.home) / "host.lock"


def _owner_path(lock: Path) -> Path:
    return lock.with_name(lock.name + ".owner")


def lock_owner(lock: Path) -> str:
    """Who holds the host lock, as the holder wrote it ("pid 123: narrate worker"), or ""."""
    try:
        return _owner_path(lock).read_text().strip()
    except OSError:
        return ""


def open_lock(path: Path) -> int:
    """Open (create) the lock file without following a symlink; a configuration error otherwise."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as e:
        why = "it is a symlink" if path.is_symlink() else (e.strerror or str(e))
        raise BadInput(
            f"cannot use the host lock {path}: {why}; set NARRATE_LOCK_PATH to a regular file path "
            "every worker of this host can write"
        ) from None


@contextlib.contextmanager
def host_lock(
    path: Path, role: str, waiting: Callable[[str], None] | None = None, home: Path | None = None
) -> Iterator[None]:
    """Hold the host lock for the block; while another process holds it, say so (through `waiting`,
    else the log: who holds it, its pid and home) and wait. `home`: this process's, written beside."""
    path = Path(path)
    fd = open_lock(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = lock_owner(path) or "another process"
            msg = f"waiting for the host lock {path}, held by {owner} (one synthesizing worker per lock)"
            (waiting or log.info)(msg)
            fcntl.flock(fd, fcntl.LOCK_EX)
        _write_owner(path, role, home)
        yield
    finally:
        os.close(fd)  # releases the lock


@contextlib.contextmanager
def host_lock_if_free(path: Path, role: str, home: Path | None = None) -> Iterator[bool]:
    """Hold the host lock for the block if nobody holds it now (True), else do not wait (False)."""
    path = Path(path)
    fd = open_lock(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        _write_owner(path, role, home)
        yield True
    finally:
        os.close(fd)  # releases the lock


def _write_owner(path: Path, role: str, home: Path | None) -> None:
    with contextlib.suppress(OSError):
        owner = _owner_path(path)
        with contextlib.suppress(FileNotFoundError):
            if owner.is_symlink():
                owner.unlink()
        ofd = os.open(owner, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(ofd, "w") as f:
            f.write(f"pid {os.getpid()}: {role}" + (f" of home {home}" if home else "") + "\n")


@dataclass(frozen=True)
class Holder:
    """Who holds a host lock, as the holder wrote it beside the lock."""

    pid: int
    role: str  # "narrate worker", "narrate run"
    home: Path | None


_OWNER = re.compile(r"pid (\d+): (.+?)(?: of home (.+))?")


def lock_holder(path: Path) -> Holder | None:
    """The live process that wrote itself down as the lock's holder, or None: nobody did, or that
    process is gone (the lock is free then, or its new holder has not written itself down yet)."""
    m = _OWNER.fullmatch(lock_owner(Path(path)))
    if m is None or not alive(int(m[1])):
        return None
    return Holder(int(m[1]), m[2], Path(m[3]) if m[3] else None)


def alive(pid: int) -> bool:
    """A process with this pid exists on this machine (a zombie counts until it is reaped)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True
