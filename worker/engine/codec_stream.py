"""Streaming codec decoding, one state per sentence: no codec frame is decoded twice.

mlx-audio's Qwen3-TTS codec decoder has a streaming mode (``streaming_step``): its causal
convolutions keep their last input columns, its transposed convolutions their overlap tails, and
its transformer a KV cache, so each call decodes only new frames and the samples equal those of
one decode of the whole sentence (within float rounding). That state lives on the decoder's
modules, one stream at a time; ``RowCodec`` keeps a sentence's state apart and swaps it in for
each of its pieces, so every row of a batch streams on its own, in any order.

Every decode runs with the decoder's trained sliding attention window (codec_window.py: mlx-audio
0.6.2 leaves it out), on every device: the transformer's state is then the last 71 frames' keys
and values per layer, so a long sentence streams at a flat cost.

``CodecWorker`` decodes pieces on one background thread (the only thread touching the decoder),
so the codec runs while the decode loop computes the next frames. While it decodes on a CPU, the
decoder's slowest layers are replaced by equivalent faster ones and its stages are computed one at
a time, which keeps the decode loop's step from waiting behind the codec's work in MLX's task
queue (codec_fast.py).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import mlx.core as mx
import numpy as np
from narrate.worker.engine.codec_fast import fast_layers, swaps_for
from narrate.worker.engine.codec_window import windowed
from narrate.worker.engine.mlx_compat import codec_state_attrs

# Attributes of the decoder's modules that hold streaming state (mlx-audio's CausalConv1d and the
# initial/output convolutions: ``_buffer``; DecoderBlockUpsample: ``_overflow``; listed and checked
# in mlx_compat's REQUIRED_INTERNALS["codec_state"]), and the decoder's own transformer cache.
STATE_ATTRS = codec_state_attrs()
TRANSFORMER_STATE = "_transformer_cache"


def stateful_modules(decoder: Any) -> list[tuple[Any, str]]:
    """(module, attribute) for every piece of streaming state on the decoder."""
    found: list[tuple[Any, str]] = []
    for _, m in decoder.named_modules():
        if hasattr(m, "reset_state"):
            found.extend((m, a) for a in STATE_ATTRS if a in m or a in m.__dict__)
    return found


class RowCodec:
    """One sentence's streaming decode: `decode` takes its next frames, returns their samples."""

    def __init__(self, decoder: Any, slots: list[tuple[Any, str]], swaps: list | None = None):
        self.decoder = decoder
        self.slots = slots
        self.swaps = swaps or []  # the window's transformer; on a CPU faster equivalents of some layers
        self.state: list[Any] = [None] * len(slots)
        self.transformer: Any = None

    def decode(self, codes: list[np.ndarray]) -> np.ndarray:
        """Samples of `codes` (per frame: (16,)), continuing where the last call stopped."""
        d = self.decoder
        for (m, a), v in zip(self.slots, self.state, strict=True):
            setattr(m, a, v)
        setattr(d, TRANSFORMER_STATE, self.transformer)
        frames = mx.array(np.stack(codes, axis=1)[None])  # (1, 16, T)
        with fast_layers(self.swaps):
            wav = d.streaming_step(frames)[0, 0]
        self.state = [getattr(m, a, None) for m, a in self.slots]
        self.transformer = getattr(d, TRANSFORMER_STATE, None)
        mx.eval(wav, self.state, [c.state for c in self.transformer or []])
        d.reset_streaming_state()  # the decoder holds no row's state between calls
        return np.array(wav.astype(mx.float32))


class CodecWorker:
    """Runs decodes in submission order on one background thread (or inline: `threaded` False)."""

    def __init__(self, decoder: Any, threaded: bool = True):
        # mlx-audio's loader wraps the decoder in mx.compile, a wrapper that reads attributes
        # through but cannot set them: the state goes onto the module behind it.
        self.decoder = getattr(decoder.streaming_step, "__self__", decoder)
        self.slots = stateful_modules(self.decoder)
        self.window = windowed(self.decoder)  # the decoder's trained attention window, on every device
        self.swaps = swaps_for(self.decoder)  # on a CPU: the faster layers
        self.pool = None
        if threaded:  # MLX streams belong to a thread: the codec thread gets its own
            device = mx.default_device()
            self.pool = ThreadPoolExecutor(
                1, "narrate-codec", initializer=lambda: mx.set_default_stream(mx.new_stream(device))
            )

    def row(self) -> RowCodec:
        return RowCodec(self.decoder, self.slots, self.window + self.swaps)

    def submit(self, row: RowCodec, codes: list[np.ndarray]) -> Future:
        if self.pool is None:
            f: Future = Future()
            f.set_result(row.decode(codes))
            return f
        return self.pool.submit(row.decode, codes)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
