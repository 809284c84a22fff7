"""MLX's float32 matrix products on a Linux CPU through the system OpenBLAS (narrate.worker.blas),
checked in fresh interpreters: which BLAS the process maps, and that the products are right."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers.blas import system_openblas

PROBE = """
import json, sys
import narrate.worker  # puts the system OpenBLAS ahead of MLX's own, unless told not to
import mlx.core as mx
import numpy as np
from narrate.worker import blas
a = mx.random.normal((3000, 16), key=mx.random.key(1))
w = mx.random.normal((16, 64), key=mx.random.key(2))
err = float(np.abs(np.array(a @ w) - np.array(a).astype(np.float64) @ np.array(w).astype(np.float64)).max())
maps = [line.split()[-1] for line in open("/proc/self/maps") if "/libopenblas" in line]  # not numpy's own
print(json.dumps({"loaded": blas.loaded, "mapped": sorted(set(maps)), "err": err}))
"""


def probe(**env: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(
    not system_openblas(), reason="Linux only, where libopenblas.so.0 loads (Debian: apt-get install libopenblas0)"
)
def test_mlx_multiplies_with_the_system_openblas_unless_told_not_to():
    used = probe(NARRATE_BLAS="auto")
    assert used["loaded"] == "libopenblas.so.0" and used["mapped"]  # in the process, ahead of MLX's bundled BLAS
    assert used["err"] < 1e-4  # and the products are right
    bundled = probe(NARRATE_BLAS="bundled")
    assert bundled["loaded"] is None and bundled["mapped"] == []
    assert bundled["err"] < 1e-4


NUMPY_PROBE = """
import ctypes, json
import narrate.worker
import mlx.core as mx
import numpy as np
from narrate.worker import blas
from narrate.worker.engine import codec_fast
calls = []
matmul = np.matmul
codec_fast.np = type("numpy", (), {"matmul": lambda a, b: calls.append(a.shape) or matmul(a, b),
                                   "asarray": np.asarray, "array": np.array})
a = mx.random.normal((3000, 16), key=mx.random.key(1))
w = mx.random.normal((16, 64), key=mx.random.key(2))
route = blas.numpy_products()
y = codec_fast.product(a, w, codec_fast._numpy_copy(w))
err = float(np.abs(np.array(y) - np.array(a).astype(np.float64) @ np.array(w).astype(np.float64)).max())
lib = ctypes.CDLL(str(blas.numpy_openblas()))
getters = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads")
threads = next(getattr(lib, n)() for n in getters if hasattr(lib, n))
maps = [line.split()[-1] for line in open("/proc/self/maps") if "/libopenblas" in line]
print(json.dumps({"loaded": blas.loaded, "mapped": maps, "route": route, "calls": calls, "err": err,
                  "threads": threads, "in_use": blas.in_use()}))
"""


def test_without_the_system_openblas_the_codecs_products_go_through_numpys_on_one_thread():
    """NARRATE_BLAS=numpy: what a Linux machine without the system OpenBLAS gets (`auto` there): MLX keeps its
    bundled BLAS, codec_fast's products go through numpy's OpenBLAS, set to one thread, and are right."""
    out = subprocess.run(
        [sys.executable, "-c", NUMPY_PROBE],
        env={**os.environ, "NARRATE_BLAS": "numpy"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["loaded"] is None and got["mapped"] == []  # the system OpenBLAS stays out
    assert got["route"] is True and got["calls"] == [[3000, 16]] and got["err"] < 1e-4
    assert got["threads"] == 1
    assert got["in_use"].startswith("MLX's own, the bundled reference BLAS (NARRATE_BLAS=numpy")
    assert "the codec's through numpy's OpenBLAS (lib" in got["in_use"]
    bundled = subprocess.run(
        [sys.executable, "-c", NUMPY_PROBE],
        env={**os.environ, "NARRATE_BLAS": "bundled"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bundled.returncode == 0, bundled.stderr
    got = json.loads(bundled.stdout.strip().splitlines()[-1])
    assert got["route"] is False and got["calls"] == [] and got["err"] < 1e-4  # MLX's own for everything


def test_a_bad_blas_choice_is_refused_by_name():
    out = subprocess.run(
        [sys.executable, "-c", "import narrate.worker"],
        env={**os.environ, "NARRATE_BLAS": "mkl"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0 and "NARRATE_BLAS='mkl': use one of auto, numpy, bundled" in out.stderr


def test_nothing_is_loaded_once_mlx_is_in_the_process_or_off_linux(monkeypatch):
    import mlx.core  # noqa: F401 - MLX is loaded: too late to go ahead of its BLAS
    from narrate.worker import blas

    monkeypatch.setattr(blas, "loaded", None)
    assert blas.use_system_openblas() is None
    monkeypatch.delitem(sys.modules, "mlx.core")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert blas.use_system_openblas() is None
