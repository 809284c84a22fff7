"""Local state of the embedded server, checked rather than trusted: a private data dir, kernel
file locks, a process's command line (to prove a PID is the process we think it is) and config
files valkey reads as we meant them."""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import time
from pathlib import Path
from typing import IO

from narrate.jobs.errors import ServerUnavailable


def private_dir(path: Path, what: str) -> None:
    """Create `path` with mode 0700, or make an existing one of ours 0700; refuse one that belongs
    to another user (its owner could read, or replace, what narrate keeps there)."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = path.stat()
        if st.st_uid != os.getuid():
            raise ServerUnavailable(
                f"{what} {path} belongs to another user (uid {st.st_uid}): use one of your own (NARRATE_HOME)"
            )
        if stat.S_IMODE(st.st_mode) != 0o700:
            path.chmod(0o700)
    except OSError as e:
        raise ServerUnavailable(f"cannot use {what} {path}: {e.strerror or e}") from None


def lock_held(path: Path) -> bool:
    """Someone holds an exclusive flock on `path` (False when the file does not exist)."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return False
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


def take_lock(f: IO[bytes], timeout: float) -> bool:
    """An exclusive flock on the open file `f` within `timeout` seconds (probes hold it briefly)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def process_command(pid: int) -> str | None:
    """The command line of process `pid` as `ps` shows it (a process may rewrite it: valkey-server
    shows its socket there), or None when there is no such process or it cannot be read. Where
    there is no `ps` (minimal Linux containers), /proc/PID/cmdline."""
    try:
        proc = subprocess.run(
            ["ps", "-ww", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, timeout=10, check=False
        )
    except FileNotFoundError:
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        return raw.replace(b"\0", b" ").decode(errors="replace").strip() or None
    except subprocess.TimeoutExpired:
        return None
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


def conf_arg(value: str) -> bytes:
    """One argument of a valkey config line, double-quoted: valkey splits lines on spaces and reads
    backslash escapes inside quotes."""
    out = bytearray(b'"')
    for byte in os.fsencode(value):
        if byte in b'"\\':
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte == 0x7F:
            out += b"\\x%02x" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')


def conf_file(settings: list[tuple[str, str]]) -> bytes:
    return b"".join(name.encode() + b" " + conf_arg(value) + b"\n" for name, value in settings)
