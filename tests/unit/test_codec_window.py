"""The codec decoder's sliding window (worker/engine/codec_window.py): its mask, its cache, and the internals
check that keeps a fixed mlx-audio from being windowed twice. The audio against the reference:
tests/system/test_parity.py."""

from __future__ import annotations

import mlx.core as mx
import numpy as np
from mlx_audio.tts.models.qwen3_tts.config import Qwen3TTSTokenizerDecoderConfig
from mlx_audio.tts.models.qwen3_tts.speech_tokenizer import DecoderTransformer
from narrate.worker.engine.codec_window import (
    WindowCache,
    WindowedTransformer,
    _probe_transformer,
    window_mask,
    window_problems,
)


def test_mask_is_transformers_sliding_window():
    """key j is seen by query i iff i - window < j <= i (transformers' sliding_window_overlay), after kept keys."""
    m = np.array(window_mask(5, 3, 4, mx.float32))
    for i in range(5):
        for j in range(8):
            q = 3 + i
            assert (m[i, j] == 0) == (q - 4 < j <= q), (i, j)
    assert window_mask(1, 3, 4, mx.float32) is None  # one frame, every kept key in its window
    assert window_mask(1, 4, 4, mx.float32) is not None


def test_cache_keeps_the_window_and_counts_every_frame():
    c = WindowCache(72)
    for _ in range(500):
        k = mx.zeros((1, 2, 1, 8))
        keys, _ = c.update_and_fetch(k, k)
        assert keys.shape[2] <= 72
    assert c.kept == 71 and c.offset == 500


def test_streaming_through_the_window_equals_the_windowed_whole_sequence():
    t = _probe_transformer(DecoderTransformer, Qwen3TTSTokenizerDecoderConfig, window=3)
    x = mx.random.normal((1, 20, 4), key=mx.random.key(1))
    w = WindowedTransformer(t, 3)
    whole = w(x)
    cache = w.make_cache()
    streamed = mx.concatenate([w(x[:, i : i + n], cache=cache) for i, n in ((0, 1), (1, 5), (6, 1), (7, 13))], axis=1)
    np.testing.assert_allclose(np.array(streamed), np.array(whole), atol=1e-5)
    assert not np.allclose(np.array(whole), np.array(t(x)), atol=1e-3)  # the window changes what frames see


def test_the_installed_mlx_audio_needs_the_window():
    assert window_problems(DecoderTransformer, Qwen3TTSTokenizerDecoderConfig) == []


class _FixedUpstream(DecoderTransformer):
    """A decoder transformer that applies its window itself, as mlx-audio does after 0.6.2."""

    def __call__(self, inputs_embeds, mask=None, cache=None):
        if mask is None and cache is None:
            n = inputs_embeds.shape[1]
            mask = window_mask(n, 0, self.config.sliding_window, inputs_embeds.dtype)
        return super().__call__(inputs_embeds, mask=mask, cache=cache)


def test_a_mlx_audio_that_windows_by_itself_fails_the_check_loudly():
    problems = window_problems(_FixedUpstream, Qwen3TTSTokenizerDecoderConfig)
    assert any("applies the codec's sliding window" in p and "not applied twice" in p for p in problems)


class _IgnoresMask(DecoderTransformer):
    def __call__(self, inputs_embeds, mask=None, cache=None):
        return super().__call__(inputs_embeds, mask=None, cache=cache)


def test_a_decoder_that_drops_narrates_mask_fails_the_check():
    """Its streamed call breaks on the window cache's shorter keys, or its whole call ignores the mask: either way
    the check names the decoder transformer."""
    problems = window_problems(_IgnoresMask, Qwen3TTSTokenizerDecoderConfig)
    assert problems and all(p.startswith("speech_tokenizer.DecoderTransformer") for p in problems)
