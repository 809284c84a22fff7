"""MLX's float32 matrix products on a Linux CPU: the system OpenBLAS ahead of the bundled BLAS.

MLX's CPU wheel for Linux (``mlx[cpu]``) bundles a reference BLAS: its float32 matrix products run
at about 5 GFLOP/s on the 2-core test machine, where OpenBLAS on one thread runs the same shapes at
19-30 GFLOP/s (the codec's audio-rate layers: 30,720 x 16 by 16 x 64, 12.9 ms against 2.2 ms).
MLX calls ``cblas_sgemm`` by name, so a BLAS loaded into the process's global symbol scope before
MLX is loaded takes its place: ``use_system_openblas`` does that with the system's OpenBLAS
(``libopenblas.so.0``: Debian and Ubuntu package it as ``libopenblas0``), on one thread (the
worker's cores already run the decode loop and the codec side by side). It is called when
narrate.worker is first imported, before anything imports mlx, and changes nothing where there is
no such library, on macOS (MLX uses Accelerate there), on a GPU (float32 products there are the
GPU's), with an OpenBLAS of 64-bit integers (another interface), or with ``NARRATE_BLAS=bundled``
or ``numpy``. The talker runs in bfloat16, which MLX multiplies with its own kernels on a CPU: it is
unchanged (with ``--quant float32`` it computes in float32, and its products go through the BLAS).

Where MLX keeps its bundled BLAS on Linux (no such library, or ``NARRATE_BLAS=numpy``), the codec's
large float32 products go through numpy's own OpenBLAS instead (``numpy_products``): the one numpy's
wheels bundle (``numpy.libs/libscipy_openblas64_*.so``), whose names MLX cannot call (64-bit
integers, prefixed names), called through ``numpy.matmul`` by codec_fast.py's layers, on one thread.
About as fast as the system OpenBLAS on those shapes, 10-16x MLX's bundled BLAS. ``bundled`` keeps
MLX's own for everything; a numpy without a bundled OpenBLAS (a distribution's) changes nothing.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

from narrate.jobs.settings import env_value

NAMES = ("libopenblas.so.0", "libopenblas.so")  # the system's OpenBLAS, found by the dynamic loader's own search
loaded: str | None = None  # the library put ahead of MLX's, if any
# numpy's bundled OpenBLAS (32- or 64-bit integers, prefixed names or not): its thread-count setters
NUMPY_THREADS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads")
_numpy_ready: bool | None = None  # numpy_products' answer, once known


def choice() -> str:
    """NARRATE_BLAS, checked (BadInput if it is none of the choices)."""
    value: str = env_value("blas")
    return value


def use_system_openblas() -> str | None:
    """Load the system OpenBLAS into the global symbol scope (once), on one thread; its name, or None
    where it is not used (the module docstring says where)."""
    global loaded
    if loaded is not None or sys.platform != "linux" or choice() != "auto" or "mlx.core" in sys.modules:
        return loaded
    for name in NAMES:
        try:
            lib = ctypes.CDLL(name)  # local first: its interface is checked before MLX can bind to it
        except OSError:
            continue
        config = getattr(lib, "openblas_get_config", None)
        set_threads = getattr(lib, "openblas_set_num_threads", None)
        if config is None or set_threads is None:
            return None
        config.restype = ctypes.c_char_p
        if b"USE64BITINT" in (config() or b""):
            return None
        ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        set_threads(1)
        loaded = name
        return loaded
    return None


WIDE = 1024  # a talker this wide (the real 0.6B and 1.7B models) multiplies products worth every core's share
threads = 1  # the system OpenBLAS's threads now


def threads_for(hidden_size: int) -> int:
    """Give the system OpenBLAS (where loaded) every core for a model whose talker is `hidden_size` wide, one thread
    for a smaller one; the threads it now has. Measured on 2 cores: at the 0.6B shape two threads made 1.39x the
    frames a second of one (the code predictor's and the talker's products are wide enough to split); on the tiny
    checkpoint one thread made 1.45-1.51x two's (small products, beside the codec's thread). Called when a job's
    engine is made (no product runs then)."""
    global threads
    want = (os.cpu_count() or 1) if hidden_size >= WIDE else 1
    if loaded is not None and want != threads:
        ctypes.CDLL(loaded).openblas_set_num_threads(want)
        threads = want
    return threads


def numpy_openblas() -> Path | None:
    """numpy's bundled OpenBLAS library (a wheel's ``numpy.libs``), if it has one with a thread setter."""
    import numpy as np

    for path in sorted((Path(np.__file__).resolve().parent.parent / "numpy.libs").glob("lib*openblas*.so*")):
        try:
            lib = ctypes.CDLL(str(path))  # numpy has loaded it already: the same library
        except OSError:
            continue
        if any(hasattr(lib, name) for name in NUMPY_THREADS):
            return path
    return None


def numpy_products() -> bool:
    """Whether codec_fast.py's layers multiply through numpy's OpenBLAS (the module docstring says
    where; never when MLX computes on a GPU): the first call sets that library to one thread."""
    global _numpy_ready
    if _numpy_ready is None:
        _numpy_ready = False
        if sys.platform == "linux" and loaded is None and choice() != "bundled" and _gpu() is None:  # a GPU's stay
            path = numpy_openblas()
            if path is not None:
                lib = ctypes.CDLL(str(path))
                getattr(lib, next(n for n in NUMPY_THREADS if hasattr(lib, n)))(1)
                _numpy_ready = True
    return _numpy_ready


def in_use() -> str:
    """Which BLAS MLX's float32 matrix products use in this process, in words (`narrate info`, the
    worker's record, `narrate bench`): the system OpenBLAS's library name where it was put ahead,
    Apple's Accelerate on macOS, else MLX's own (bundled), and where the codec's go through numpy's."""
    if loaded is not None:
        return f"{loaded} (the system OpenBLAS)"
    if sys.platform == "darwin":
        return "Accelerate (macOS)"
    gpu = _gpu()
    if gpu is not None:
        return f"the GPU's ({gpu}): MLX multiplies float32 there"
    why = f"NARRATE_BLAS={choice()}" if choice() != "auto" else "no system libopenblas.so.0 with 32-bit integers"
    own = f"MLX's own, the bundled reference BLAS ({why}; see docs/models.md)"
    path = numpy_openblas() if sys.platform == "linux" and choice() != "bundled" else None
    return own if path is None else f"{own}; the codec's through numpy's OpenBLAS ({path.name})"


def _gpu() -> str | None:
    """MLX's default device where it is not the CPU (imported after narrate.worker, so the system OpenBLAS is
    ahead of it); None on the CPU or where MLX is not installed (a host that only submits)."""
    try:
        import mlx.core as mx
    except ImportError:
        return None
    device = mx.default_device()
    return None if device == mx.cpu else str(device)
