"""Model id rewriting (the documented table) and quantization of a local bf16 checkpoint at load."""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import pytest
from mlx.utils import tree_flatten
from narrate.jobs.errors import BadInput
from narrate.worker.engine.models import ModelCache, load, resolve

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
    ],
)
def test_hub_id_rewriting_table(model, quant, metal, source, loaded_quant):
    r = resolve(model, quant, metal=metal)
    assert (r.source, r.quant, r.local) == (source, loaded_quant, False)
    # mlx-community repos are already quantized; other ids are quantized at load.
    assert r.quantize_bits == ({"4bit": 4, "6bit": 6, "8bit": 8}.get(quant) if model.startswith("someone") else None)


def test_local_checkpoint_resolution(checkpoint):
    assert resolve(str(checkpoint), None, metal=True).quant == "bf16"  # as is, never silently quantized
    r = resolve(str(checkpoint), "6bit", metal=False)
    assert (r.local, r.quantize_bits, r.source) == (True, 6, str(checkpoint.resolve()))


@pytest.mark.parametrize("bad", ["not a model", "../x/y", "/no/such/dir", "a/b/c"])
def test_unresolvable_model_is_a_clear_error(bad):
    with pytest.raises(BadInput, match="neither a local checkpoint directory nor a Hugging Face id"):
        resolve(bad, None, metal=False)


def _linear_widths(module) -> dict[str, int | None]:
    """Path -> bits for every Linear/QuantizedLinear under `module` (None: floating point)."""
    out = {}
    for path, m in module.named_modules():
        if isinstance(m, nn.QuantizedLinear):
            out[path] = m.bits
        elif isinstance(m, nn.Linear):
            out[path] = None
    return out


@pytest.mark.parametrize("quant,bits", [("4bit", 4), ("6bit", 6), ("8bit", 8)])
def test_quantize_local_bf16_checkpoint_at_load(checkpoint, quant, bits):
    loaded = load(resolve(str(checkpoint), quant, metal=False))
    model = loaded.model
    talker = _linear_widths(model.talker)
    assert talker and set(talker.values()) == {bits}, talker  # every talker/code-predictor linear
    # Embeddings, the speaker encoder and the codec stay floating point.
    assert not any(isinstance(m, nn.QuantizedEmbedding) for _, m in model.named_modules())
    for part in (model.speaker_encoder, model.speech_tokenizer):
        params = dict(tree_flatten(part.parameters()))
        assert params and all(v.dtype in (mx.float32, mx.bfloat16) for v in params.values())
        assert not any(isinstance(m, nn.QuantizedLinear) for _, m in part.named_modules())
    assert loaded.talker_dtype == mx.bfloat16
    # And it still generates.
    out = list(model.generate(text="Hi.", ref_audio=mx.zeros((24000,)), max_tokens=2, verbose=False))
    assert sum(r.token_count for r in out) >= 1


def test_model_cache_keeps_models_warm(checkpoint):
    cache = ModelCache(capacity=2)
    a = cache.get(str(checkpoint), None)
    assert cache.get(str(checkpoint), None) is a  # no reload for the same (model, quant)
    b = cache.get(str(checkpoint), "8bit")
    assert b is not a and len(cache) == 2
