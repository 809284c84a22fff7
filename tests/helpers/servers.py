"""The servers the tests use: the external Redis (NARRATE_TEST_REDIS_URL, one DB per pytest-xdist
worker) and a private Valkey server on a free port that a test can kill and restart."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from narrate.jobs.server.embedded import valkey_binary


def _external_redis_url() -> str:
    """The external server's DB for this test process: NARRATE_TEST_REDIS_URL (default DB 9), and
    with pytest-xdist the next DBs for the other workers (gw1 takes DB 10, ...), each flushed alone."""
    url = os.environ.get("NARRATE_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    base, _, db = url.rpartition("/")
    return f"{base}/{int(db) + int(worker.removeprefix('gw'))}" if db.isdigit() else url


EXTERNAL_REDIS_URL = _external_redis_url()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateRedis:
    """A Valkey server on a free TCP port with a password and AOF, that a test can kill and restart."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="pr-", dir="/tmp"))
        self.port = free_port()
        self.password = "s3cret-" + os.urandom(4).hex()
        self.url = f"redis://:{self.password}@127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [valkey_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--requirepass", self.password],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        import redis

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if redis.Redis.from_url(self.url).ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
        raise RuntimeError("private redis did not start")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)
