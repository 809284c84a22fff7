"""A Redis server that answers but refuses every write: out of memory under ``noeviction`` (OOM), unable
to persist (MISCONF, often a full disk), short of the replicas ``min-replicas-to-write`` asks for
(NOREPLICAS), or a read-only replica (READONLY). A worker cannot even register there, and restarting it
at once only fails the same way (a whole worker start, a traceback, each time). So the worker process
ends with REDIS_REFUSES and one line; its supervisor says once what the server answered and what to
do, looks again with a growing delay (WAIT_FIRST_S, doubling, at most WAIT_MAX_S) with one small
write of its own, and starts the worker again as soon as a write is accepted."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Callable

import redis
from narrate.jobs.errors import NarrateError
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings

log = logging.getLogger("narrate.supervisor")
REDIS_REFUSES = 3  # the worker process's exit code: its server refused a write
EXIT_NAME = "redis refused writes"  # how the supervisor names that exit (not the job's fault)
WAIT_FIRST_S = 1.0
WAIT_MAX_S = 60.0
PROBE_KEY = "narrate:write-probe:{pid}"
_REFUSED = re.compile(r"\b(MISCONF|OOM|NOREPLICAS|READONLY)\b")
_WHAT_TO_DO = {
    "OOM": "the server is at its maxmemory with noeviction: raise maxmemory, free memory (delete old jobs "
    "or keys), or choose an eviction policy for other data",
    "MISCONF": "the server cannot persist (often its disk is full): free space on its disk, or fix its "
    "dir/appendonly settings",
    "NOREPLICAS": "the server has fewer replicas in sync than its min-replicas-to-write asks for: bring its "
    "replicas back, or lower min-replicas-to-write",
    "READONLY": "NARRATE_REDIS_URL names a read-only replica: point it at the primary",
}


def refused_write(e: BaseException | None) -> str | None:
    """What the server answered (one line, without redis-py's pipeline preamble) when `e`, or an error
    it was raised from, is a refused write; else None."""
    seen = 0
    while e is not None and seen < 5:
        if isinstance(e, redis.ResponseError):
            text = (str(e).splitlines() or [""])[0]
            text = text.partition("caused error: ")[2].strip() or text.strip()
            for kind, code in (
                (redis.exceptions.OutOfMemoryError, "OOM"),
                (redis.exceptions.ReadOnlyError, "READONLY"),
            ):
                if isinstance(e, kind) and not text.startswith(code):
                    text = f"{code} {text}"  # redis-py keeps the code only as the class
            if _REFUSED.search(text):
                return text
        e = e.__cause__ or e.__context__
        seen += 1
    return None


def what_to_do(answer: str) -> str:
    found = _REFUSED.search(answer)
    return _WHAT_TO_DO[found.group(1)] if found else "fix the server so that it accepts writes"


def probe(settings: Settings) -> str | None:
    """None when the server accepts a write now (or cannot be reached: an outage the worker waits out
    itself); else what it answered."""
    try:
        with Connection(settings) as conn:
            conn.redis.set(PROBE_KEY.format(pid=os.getpid()), "1", ex=60)
    except redis.RedisError as e:
        return refused_write(e)
    except (NarrateError, OSError):
        return None
    return None


def wait_for_writes(
    settings: Settings, answer: str, stopped: Callable[[], bool], sleep: Callable[[float], None] = time.sleep
) -> bool:
    """Wait until the server accepts a write (True), or a stop comes (False). One log line says what
    the server answered (again only if the answer changes) and what to do; one more when it accepts."""
    said = ""
    delay = WAIT_FIRST_S
    while True:
        if answer != said:
            log.error(
                "the Redis server refuses writes (%s): %s; the worker waits, looking again every %.0f s "
                "at most, and starts by itself once writes are accepted",
                answer,
                what_to_do(answer),
                WAIT_MAX_S,
            )
            said = answer
        until = time.monotonic() + delay
        while time.monotonic() < until:
            if stopped():
                return False
            sleep(min(0.2, max(0.0, until - time.monotonic())))
        with contextlib.suppress(Exception):  # noqa: BLE001 - a probe that fails oddly is a look that found nothing
            now = probe(settings)
            if now is None:
                log.warning("the Redis server accepts writes again: starting the worker")
                return True
            answer = now
        delay = min(delay * 2, WAIT_MAX_S)
