"""The servers the tests use: the external Redis (a DB of its own per test process, see
`external_redis_url`) and a private Valkey server on a free port that a test can kill and restart."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from narrate.jobs.server.embedded import valkey_binary

from helpers.ports import free_port

__all__ = ["free_port"]

SHARED_SERVER = "redis://127.0.0.1:6379"
_claim = None  # the connection whose name claims this process's DB (it goes with the process)


@functools.cache
def external_redis_url() -> str:
    """The external server's DB for this test process.

    - NARRATE_TEST_REDIS_URL set: that DB (and with pytest-xdist the next DBs for the other workers:
      gw1 takes DB n+1, ...), flushed around each test: the caller said it is the tests' own.
    - Otherwise the Redis on 127.0.0.1:6379 is shared (other programs, other test runs), so a DB is
      flushed only if this process claimed it: the first DB from 15 down to 1 that is empty and that
      no live test process has named a connection for (CLIENT SETNAME narrate-tests-dbN, held open
      for the life of the process, so a killed run's claim goes with it and no key marks it). A DB
      holding anything else is never touched."""
    global _claim
    told = os.environ.get("NARRATE_TEST_REDIS_URL")
    if told:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
        base, _, db = told.rpartition("/")
        return f"{base}/{int(db) + int(worker.removeprefix('gw'))}" if db.isdigit() else told
    import redis

    for db in range(15, 0, -1):
        url, name = f"{SHARED_SERVER}/{db}", f"narrate-tests-db{db}"
        client = redis.Redis.from_url(url, single_connection_client=True)
        if client.dbsize() != 0 or _holders(client, name):
            client.close()
            continue
        client.client_setname(name)
        mine = client.client_id()
        if min(_holders(client, name)) == mine and client.dbsize() == 0:  # two at once: the older connection wins
            _claim = client
            return url
        client.close()
    raise RuntimeError(
        f"no free empty DB on {SHARED_SERVER} for the tests: set NARRATE_TEST_REDIS_URL to a DB they may flush"
    )


def _holders(client, name: str) -> list[int]:
    return [int(c["id"]) for c in client.client_list() if c.get("name") == name]


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
            [
                valkey_binary(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.dir),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--requirepass",
                self.password,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
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
