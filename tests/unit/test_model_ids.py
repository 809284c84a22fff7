"""Model id rewriting (the documented table), a local checkpoint's resolution and an unresolvable
model's clear error, without loading a model."""

from __future__ import annotations

import pytest
from narrate.jobs.errors import BadInput
from narrate.worker.engine.models import resolve

ID = "Qwen3-TTS-12Hz-1.7B-Base"


@pytest.mark.parametrize(
    ("model", "quant", "metal", "source", "loaded_quant"),
    [
        (f"Qwen/{ID}", None, True, f"mlx-community/{ID}-6bit", "6bit"),
        (f"Qwen/{ID}", None, False, f"mlx-community/{ID}-bf16", "bf16"),
        (f"Qwen/{ID}", "4bit", False, f"mlx-community/{ID}-4bit", "4bit"),
        (f"mlx-community/{ID}", None, True, f"mlx-community/{ID}-6bit", "6bit"),
        (f"mlx-community/{ID}", "8bit", True, f"mlx-community/{ID}-8bit", "8bit"),
        (f"mlx-community/{ID}-8bit", None, True, f"mlx-community/{ID}-8bit", "8bit"),
        (f"mlx-community/{ID}-8bit", "4bit", True, f"mlx-community/{ID}-4bit", "4bit"),
        (f"mlx-community/{ID}-bf16", "6bit", False, f"mlx-community/{ID}-6bit", "6bit"),
        (f"Qwen/{ID}-4bit", None, False, f"mlx-community/{ID}-4bit", "4bit"),
        (f"someone/{ID}", None, True, f"someone/{ID}", "bf16"),
        (f"someone/{ID}", "8bit", True, f"someone/{ID}", "8bit"),
        # float32: the bf16 weights, upcast at load
        (f"Qwen/{ID}", "float32", False, f"mlx-community/{ID}-bf16", "float32"),
        (f"mlx-community/{ID}-8bit", "float32", True, f"mlx-community/{ID}-bf16", "float32"),
        (f"someone/{ID}", "float32", False, f"someone/{ID}", "float32"),
    ],
)
def test_hub_id_rewriting_table(model, quant, metal, source, loaded_quant):
    r = resolve(model, quant, metal=metal, float32=False)
    assert (r.source, r.quant, r.local) == (source, loaded_quant, False)
    # mlx-community repos are already quantized; other ids are quantized at load.
    assert r.quantize_bits == ({"4bit": 4, "6bit": 6, "8bit": 8}.get(quant) if model.startswith("someone") else None)


@pytest.mark.parametrize(
    ("model", "source", "loaded_quant"),
    [
        (f"Qwen/{ID}", f"mlx-community/{ID}-bf16", "float32"),
        (f"mlx-community/{ID}", f"mlx-community/{ID}-bf16", "float32"),
        (f"mlx-community/{ID}-bf16", f"mlx-community/{ID}-bf16", "bf16"),  # named: as named
        (f"mlx-community/{ID}-6bit", f"mlx-community/{ID}-6bit", "6bit"),
        (f"someone/{ID}", f"someone/{ID}", "float32"),
    ],
)
def test_a_cpu_with_the_system_openblas_defaults_to_float32(model, source, loaded_quant):
    """Where float32 products go through the system OpenBLAS (worker/blas.py), float32 is the CPU's default: the bf16
    weights upcast at load. A quantization the id names, or --quant, wins."""
    r = resolve(model, None, metal=False, float32=True)
    assert (r.source, r.quant, r.quantize_bits) == (source, loaded_quant, None)
    assert resolve(model, "bf16", metal=False, float32=True).quant == "bf16"


def test_float32_is_the_default_only_on_a_cpu_with_the_system_openblas(monkeypatch):
    import mlx.core as mx
    from narrate.worker import blas
    from narrate.worker.engine import models

    monkeypatch.setattr(blas, "loaded", "libopenblas.so.0")
    assert models.cpu_float32() == (mx.default_device().type == mx.cpu)
    assert resolve(f"Qwen/{ID}", None, metal=False).quant == (
        "float32" if mx.default_device().type == mx.cpu else "bf16"
    )
    monkeypatch.setattr(blas, "loaded", None)  # MLX's bundled BLAS: float32 is slower there than bf16
    assert not models.cpu_float32() and resolve(f"Qwen/{ID}", None, metal=False).quant == "bf16"


def test_local_checkpoint_resolution(checkpoint):
    assert resolve(str(checkpoint), None, metal=True).quant == "bf16"  # as is, never silently quantized
    assert resolve(str(checkpoint), None, metal=False, float32=False).quant == "bf16"
    r = resolve(str(checkpoint), None, metal=False, float32=True)
    assert (r.quant, r.quantize_bits) == ("float32", None)  # the CPU's default: upcast at load, never quantized
    r = resolve(str(checkpoint), "6bit", metal=False)
    assert (r.local, r.quantize_bits, r.source) == (True, 6, str(checkpoint.resolve()))
    r = resolve(str(checkpoint), "float32", metal=False)
    assert (r.quant, r.quantize_bits, r.source) == ("float32", None, str(checkpoint.resolve()))


@pytest.mark.parametrize("bad", ["not a model", "../x/y", "/no/such/dir", "a/b/c"])
def test_unresolvable_model_is_a_clear_error(bad):
    with pytest.raises(BadInput, match="neither a local checkpoint directory nor a Hugging Face id"):
        resolve(bad, None, metal=False)


def test_a_real_models_products_get_every_core_of_the_system_openblas():
    """The system OpenBLAS multiplies a real model's (talker 1024 wide or more) products on every core, a small one's
    on one thread (beside the codec's thread); set when a job's engine is made."""
    import os

    from narrate.worker import blas

    if blas.loaded is None:
        pytest.skip("no system OpenBLAS here (Debian and Ubuntu: libopenblas0)")
    try:
        assert blas.threads_for(2048) == (os.cpu_count() or 1) == blas.threads
        assert blas.threads_for(1024) == (os.cpu_count() or 1)
        assert blas.threads_for(16) == 1 == blas.threads
    finally:
        blas.threads_for(16)
