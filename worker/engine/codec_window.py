"""The codec decoder's sliding attention window, which mlx-audio 0.6.2 leaves out.

Qwen3-TTS's 12 Hz codec decoder was trained with sliding-window attention on every layer of its
transformer: a frame attends to itself and the 71 frames before it (``sliding_window`` = 72 in the
codec's config; the reference, qwen-tts, builds transformers' sliding-window causal mask:
key > query - 72). mlx-audio 0.6.2's ``DecoderTransformer`` builds a plain causal mask and an
unbounded KV cache, in its whole-sequence call and in ``streaming_step`` alike, so past frame 72
of a sentence (5.76 s) every frame attends further back than the model ever saw and the audio
departs from the model's own (measured against the reference: 0.8-1.1 % of the peak at the 0.6B
shape with random weights, 8-11 % with attention as sharp as trained weights have it).

``windowed(decoder)`` gives the swap (codec_fast.fast_layers applies it while narrate decodes) that
puts ``WindowedTransformer`` in the place of the decoder's ``pre_transformer``: the same layers and
weights, called with the window's mask, and for streaming a cache per layer that keeps only the
last ``window - 1`` keys and values (``WindowCache``), so a stream's attention costs the same at
frame 5,000 as at frame 72 and its memory stays flat. It is applied on every device (a GPU's decode
needs the window as much as a CPU's).

mlx-audio fixed this upstream after 0.6.2. ``window_problems`` (run with the other internals
checks, mlx_compat.check_internals) computes a tiny decoder transformer with a window of 2 both
ways and fails loudly when mlx-audio already windows, so that a release with the fix is never
windowed twice.
"""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_map
from narrate.worker.engine.codec_fast import Swap


class WindowCache:
    """One layer's keys and values for a streaming decode with a window of `window` frames: the
    last ``window - 1`` of them are kept between calls (what the next frame may still attend to).
    ``offset`` counts every frame seen (mlx-audio's decoder takes its positions from it)."""

    def __init__(self, window: int):
        self.window = window
        self.keys: mx.array | None = None
        self.values: mx.array | None = None
        self.offset = 0

    @property
    def kept(self) -> int:
        return 0 if self.keys is None else self.keys.shape[2]

    def update_and_fetch(self, keys: mx.array, values: mx.array) -> tuple[mx.array, mx.array]:
        """The kept keys and values followed by the new ones (what this call attends over); then
        only the last ``window - 1`` are kept."""
        self.offset += keys.shape[2]
        if self.keys is not None and self.values is not None:
            keys = mx.concatenate([self.keys, keys], axis=2)
            values = mx.concatenate([self.values, values], axis=2)
        keep = self.window - 1
        self.keys, self.values = keys[:, :, -keep:, :], values[:, :, -keep:, :]
        return keys, values

    @property
    def state(self) -> list[mx.array]:
        return [a for a in (self.keys, self.values) if a is not None]


def window_mask(queries: int, kept: int, window: int, dtype: mx.Dtype) -> mx.array | None:
    """The additive mask (queries, kept + queries) of `queries` new frames after `kept` earlier
    keys: query i (at key index kept + i) sees keys j with kept + i - window < j <= kept + i.
    None where every query may see every key (one new frame within the window)."""
    if queries == 1 and kept < window:
        return None
    q = mx.arange(queries)[:, None] + kept
    k = mx.arange(kept + queries)[None, :]
    allowed = (k <= q) & (k > q - window)
    return mx.where(allowed, mx.array(0.0, dtype=dtype), mx.array(-mx.inf, dtype=dtype))


class WindowedTransformer(nn.Module):
    """mlx-audio's ``DecoderTransformer`` (`inner`, its layers and weights untouched) with the
    codec's sliding window: the window's mask on every call, `WindowCache` for streaming."""

    def __init__(self, inner: Any, window: int):
        super().__init__()
        self.inner = inner
        self.window = window

    def make_cache(self) -> list[WindowCache]:
        return [WindowCache(self.window) for _ in self.inner.layers]

    def __call__(self, inputs_embeds: mx.array, mask: mx.array | None = None, cache: list | None = None) -> mx.array:
        kept = 0
        if cache is not None:
            if not isinstance(cache[0], WindowCache):
                raise TypeError("the windowed codec transformer streams with its own caches (make_cache)")
            kept = cache[0].kept
        if mask is None:
            # None only for one new frame that sees every kept key (mlx-audio masks nothing then)
            mask = window_mask(inputs_embeds.shape[1], kept, self.window, inputs_embeds.dtype)
        out: mx.array = self.inner(inputs_embeds, mask=mask, cache=cache)
        return out


def window_of(decoder: Any) -> int | None:
    """The decoder's trained window (its config's ``sliding_window``), or None where it has none."""
    value = getattr(getattr(decoder, "config", None), "sliding_window", None)
    return int(value) if value else None


def windowed(decoder: Any) -> list[Swap]:
    """The swap that gives `decoder` (mlx-audio's codec decoder module, not its mx.compile wrapper)
    its trained window while narrate decodes; none where the config names no window."""
    window = window_of(decoder)
    inner = getattr(decoder, "pre_transformer", None)
    if window is None or inner is None:
        return []
    return [(decoder, "pre_transformer", inner, WindowedTransformer(inner, window))]


def _probe_transformer(cls: Any, config_cls: Any, window: int) -> Any:
    config = config_cls(
        latent_dim=4,
        hidden_size=8,
        intermediate_size=8,
        head_dim=8,
        num_attention_heads=1,
        num_key_value_heads=1,
        num_hidden_layers=1,
        sliding_window=window,
    )
    t = cls(config)
    keys = iter(mx.random.split(mx.random.key(7), 64))
    t.update(tree_map(lambda p: mx.random.normal(p.shape, key=next(keys)), t.parameters()))
    return t


def window_problems(transformer_cls: Any, config_cls: Any) -> list[str]:
    """What makes narrate's window wrong for this mlx-audio: its decoder transformer windows by
    itself already (whole call or streaming), or it no longer takes the mask and cache narrate
    gives it. Computed on a tiny transformer with a window of 2 (microseconds)."""
    name = "speech_tokenizer.DecoderTransformer"
    if transformer_cls is None or config_cls is None:
        return [f"{name} or config.Qwen3TTSTokenizerDecoderConfig is missing"]
    try:
        t = _probe_transformer(transformer_cls, config_cls, window=2)
        x = mx.random.normal((1, 6, 4), key=mx.random.key(8))
        causal = nn.MultiHeadAttention.create_additive_causal_mask(6).astype(x.dtype)
        theirs, full = t(x), t(x, mask=causal)
        cache = t.make_cache()
        theirs_streamed = mx.concatenate([t(x[:, i : i + 1], cache=cache) for i in range(6)], axis=1)
        ours = WindowedTransformer(t, 2)
        wcache = ours.make_cache()
        ours_streamed = mx.concatenate([ours(x[:, i : i + 2], cache=wcache) for i in range(0, 6, 2)], axis=1)
        ours_whole = ours(x)
    except Exception as e:  # noqa: BLE001 - a changed class is one more thing to report
        return [f"{name} could not be probed for the codec's sliding window ({type(e).__name__}: {e})"]
    problems = []
    if not mx.allclose(ours_whole, ours_streamed, atol=1e-5).item():
        problems.append(f"{name} streamed through narrate's window cache no longer equals its windowed whole call")
    if mx.allclose(ours_whole, full, atol=1e-4).item():
        problems.append(f"{name} ignores the mask narrate gives it (the window would not be applied)")
    if not (mx.allclose(theirs, full, atol=1e-5).item() and mx.allclose(theirs_streamed, full, atol=1e-5).item()):
        problems.append(
            f"{name} no longer attends over the whole causal past by itself (mlx-audio now applies the codec's "
            "sliding window, as upstream fixed after 0.6.2): remove narrate's (worker/engine/codec_window.py) so that "
            "it is not applied twice"
        )
    return problems
