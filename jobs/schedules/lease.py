"""The lease of a schedule tick: one key in Redis, claimed with SET NX, that says who runs the tick.

The holder renews it from a thread while the tick runs; a holder that dies (SIGKILL, power cut, a
host gone) stops renewing and the lease expires on the server's clock, so another scheduler takes
the tick over and finishes it. Every write a tick makes is done by a script that first checks the
lease is still its own, so a holder that lost it (stopped for a while, then woke) writes nothing.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from typing import cast

import redis
from narrate.jobs.scripts import load_script

log = logging.getLogger("narrate.scheduler")

_RECORD = load_script("lease_record")
_FINISH = load_script("lease_finish")
_RENEW = load_script("lease_renew")
_RELEASE = load_script("lease_release")


class LeaseLost(Exception):
    """Another scheduler has the tick now (this one was too slow to renew, or the schedule went)."""


class Lease:
    def __init__(self, r: redis.Redis, key: str, seconds: float, tick: float | None):
        self.r = r
        self.key = key
        self.ms = max(100, int(seconds * 1000))
        self.value = json.dumps(
            {
                "token": uuid.uuid4().hex,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "tick": tick,
                "started": time.time(),
            }
        )
        self._record, self._finish, self._renew_script, self._release = (
            r.register_script(code) for code in (_RECORD, _FINISH, _RENEW, _RELEASE)
        )
        self.lost = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> bool:
        if not self.r.set(self.key, self.value, nx=True, px=self.ms):
            return False
        self._thread = threading.Thread(target=self._renew, name=f"lease {self.key}", daemon=True)
        self._thread.start()
        return True

    def _renew(self) -> None:
        while not self._done.wait(self.ms / 5000):
            try:
                if not self._renew_script([self.key], [self.value, self.ms]):
                    self.lost.set()
                    return
            except redis.RedisError as e:  # keep trying: the lease is only lost once it expires
                log.warning("cannot renew the lease %s: %s", self.key, e)

    def check(self) -> None:
        if self.lost.is_set():
            raise LeaseLost(self.key)

    def record(self, keys: list[str], field: bytes, values: list[str]) -> None:
        """Set ("" deletes, "-" leaves) `field` in each hash of `keys`, if the lease is still ours."""
        if not self._record([self.key, *keys], [self.value, field, *values]):
            self.lost.set()
            raise LeaseLost(self.key)

    def finish(self, schedules: str, name: str, state_key: str, state: str, problem_key: str) -> bool:
        """Write the tick's outcome and end the lease in one step (False: it was not ours any more)."""
        self._stop()
        return bool(self._finish([self.key, schedules, state_key, problem_key], [self.value, name, state]))

    def release(self) -> None:
        self._stop()
        try:
            self._release([self.key], [self.value])
        except redis.RedisError as e:  # it expires by itself
            log.warning("cannot release the lease %s: %s", self.key, e)

    def _stop(self) -> None:
        self._done.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()


def holder(r: redis.Redis, key: str) -> dict | None:
    raw = r.get(key)
    if raw is None:
        return None
    try:
        return cast(dict, json.loads(raw))  # the lease's own record: a JSON object
    except ValueError:
        return {}
