"""Model id rewriting (the documented table) and quantization of a local bf16 checkpoint at load."""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import pytest
from mlx.utils import tree_flatten
from narrate.worker.engine.models import ModelCache, load, resolve


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


def test_float32_upcasts_the_talker_and_code_predictor_only(checkpoint):
    """`--quant float32`: every floating-point weight of the talker (its code predictor with it) in float32,
    nothing quantized; the speaker encoder and the codec as loaded; the same weights' identity."""
    bf16 = load(resolve(str(checkpoint), "bf16", metal=False))
    loaded = load(resolve(str(checkpoint), "float32", metal=False))
    model = loaded.model
    assert loaded.talker_dtype == mx.float32 and loaded.resolved.quant == "float32" and loaded.key == bf16.key
    talker = dict(tree_flatten(model.talker.parameters()))
    assert {v.dtype for v in talker.values()} == {mx.float32}
    assert any(k.startswith("code_predictor.") for k in talker)
    assert set(_linear_widths(model.talker).values()) == {None}
    old = dict(tree_flatten(bf16.model.talker.parameters()))
    assert all(mx.array_equal(v, old[k].astype(mx.float32)).item() for k, v in talker.items())  # exact upcast
    for part in ("speaker_encoder", "speech_tokenizer"):
        mine, theirs = (dict(tree_flatten(getattr(m, part).parameters())) for m in (model, bf16.model))
        assert {k: v.dtype for k, v in mine.items()} == {k: v.dtype for k, v in theirs.items()}
    out = list(model.generate(text="Hi.", ref_audio=mx.zeros((24000,)), max_tokens=2, verbose=False))
    assert sum(r.token_count for r in out) >= 1


def test_model_cache_keeps_models_warm(checkpoint):
    cache = ModelCache(capacity=2)
    a = cache.get(str(checkpoint), None)
    assert cache.get(str(checkpoint), None) is a  # no reload for the same (model, quant)
    b = cache.get(str(checkpoint), "8bit")
    assert b is not a and len(cache) == 2
    c = cache.get(str(checkpoint), "float32")  # its own entry; the oldest (bf16) dropped
    assert c.talker_dtype == mx.float32 and cache.get(str(checkpoint), "8bit") is b and len(cache) == 2
