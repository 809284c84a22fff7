"""The host lock: one synthesizing worker per host (kernel file lock, released even on SIGKILL)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

log = logging.getLogger("narrate.worker")


@contextlib.contextmanager
def host_lock(path: Path) -> Iterator[None]:
    lock = FileLock(str(path), mode=0o666)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        log.info("another worker on this host is synthesizing; waiting for the host lock %s", path)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()
