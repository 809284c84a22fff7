"""Whether this machine has the system OpenBLAS that narrate.worker.blas puts ahead of MLX's own."""

from __future__ import annotations

import ctypes
import sys


def system_openblas() -> bool:
    """True on Linux where libopenblas.so.0 loads."""
    if sys.platform != "linux":
        return False
    try:
        ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return False
    return True
