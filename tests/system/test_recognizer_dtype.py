"""The proof pass's recognizer and the word timings' aligner compute in their checkpoint's dtype on every path: the
audio tower takes its mel features cast to its weights' dtype (mlx-audio hands it float32 features: a bf16 tower
then computed in float32), and the text model's KV cache and logits stay in it. As the talker's test does
(test_kv_dtype.py), instance-level spies watch the real mlx-audio code run on the tiny bf16 checkpoints."""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import numpy as np


class Spy(nn.Module):
    """A module in another's place that records the dtype of what goes in and what comes out."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        object.__setattr__(self, "seen", {"in": set(), "out": set()})

    def __call__(self, x, *args, **kwargs):
        self.seen["in"].add(x.dtype)
        out = self.inner(x, *args, **kwargs)
        self.seen["out"].add((out[0] if isinstance(out, tuple) else out).dtype)
        return out


def takes(*seconds: float) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [(0.1 * rng.standard_normal(int(24_000 * s))).astype(np.float32) for s in seconds]


def test_qwen3_asr_hears_in_bf16_through_narrates_decode(asr_checkpoint):
    from narrate.worker.engine.recognizer import MlxRecognizer, RecognizerThread

    r = MlxRecognizer.load(str(asr_checkpoint))

    def run():
        model = getattr(r.model, "_model", r.model)  # mlx-audio's Model wraps the module
        assert model.audio_tower.conv2d1.weight.dtype == mx.bfloat16  # the tiny checkpoint is bf16
        tower = model.audio_tower = Spy(model.audio_tower)
        head = model.lm_head = Spy(model.lm_head) if model.lm_head is not None else None
        caches = []
        make = model.make_cache

        def make_cache(*a, **k):
            c = make(*a, **k)
            caches.append(c)
            return c

        model.make_cache = make_cache
        try:
            r._transcribe(takes(1.2, 2.0), ["english", "english"], ["One two.", "Three four five."])
        finally:
            del model.make_cache
            model.audio_tower = tower.inner
            if head is not None:
                model.lm_head = head.inner
        kv = {c.keys.dtype for cs in caches for c in cs if c.keys is not None}
        return tower.seen, head.seen if head else None, kv

    tower, head, kv = RecognizerThread.run(run)
    assert tower == {"in": {mx.bfloat16}, "out": {mx.bfloat16}}
    assert kv == {mx.bfloat16}
    if head is not None:
        assert head["out"] == {mx.bfloat16}


def test_the_aligner_hears_in_bf16_through_mlx_audios_generate(aligner_checkpoint):
    from narrate.worker.engine.aligner import MlxAligner
    from narrate.worker.engine.recognizer import RecognizerThread

    a = MlxAligner.load(str(aligner_checkpoint))

    def run():
        model = getattr(a.model, "_model", a.model)  # mlx-audio's Model wraps the module
        tower = model.audio_tower = Spy(model.audio_tower)
        head = model.lm_head = Spy(model.lm_head)  # the timestamp classes' logits, from the text model's states
        try:
            a._align(takes(1.5), ["One two three."], ["english"])
        finally:
            model.audio_tower, model.lm_head = tower.inner, head.inner
        return tower.seen, head.seen

    tower, head = RecognizerThread.run(run)
    assert tower == {"in": {mx.bfloat16}, "out": {mx.bfloat16}}
    assert head == {"in": {mx.bfloat16}, "out": {mx.bfloat16}}


def test_parakeet_hears_in_its_weights_dtype(parakeet_checkpoint):
    from narrate.worker.engine.recognizer import MlxRecognizer, RecognizerThread, weights_dtype

    r = MlxRecognizer.load(str(parakeet_checkpoint))

    def run():
        model = r.model
        encoder = model.encoder = Spy(model.encoder)
        try:
            r._transcribe(takes(1.5), ["english"], ["One two three."])
        finally:
            model.encoder = encoder.inner
        return weights_dtype(model), encoder.seen

    dtype, seen = RecognizerThread.run(run)
    assert seen == {"in": {dtype}, "out": {dtype}}
