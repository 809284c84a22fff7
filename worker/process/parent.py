"""A supervised worker process dies with its supervisor (its job is then recovered by the next
worker of the host). Linux: the kernel's parent-death signal. macOS (no such signal): a daemon
thread that notices the parent is gone (the process is re-parented) and kills this process."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

POLL_S = 0.5


def die_with_parent() -> None:
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            if os.getppid() == parent:
                return
    threading.Thread(target=_watch, args=(parent,), daemon=True, name="narrate-parent-watch").start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os.kill(os.getpid(), signal.SIGKILL)
