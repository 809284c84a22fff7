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


def test_a_bad_blas_choice_is_refused_by_name():
    out = subprocess.run(
        [sys.executable, "-c", "import narrate.worker"],
        env={**os.environ, "NARRATE_BLAS": "mkl"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode != 0 and "NARRATE_BLAS='mkl': use one of auto, bundled" in out.stderr


def test_nothing_is_loaded_once_mlx_is_in_the_process_or_off_linux(monkeypatch):
    import mlx.core  # noqa: F401 - MLX is loaded: too late to go ahead of its BLAS
    from narrate.worker import blas

    monkeypatch.setattr(blas, "loaded", None)
    assert blas.use_system_openblas() is None
    monkeypatch.delitem(sys.modules, "mlx.core")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert blas.use_system_openblas() is None
