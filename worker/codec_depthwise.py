"""The codec's depthwise convolutions as shifted multiply-adds, for narrate's streaming decodes.

The Qwen3-TTS codec decoder's ConvNeXt blocks start with a depthwise convolution (kernel 7, one
filter per channel: ``groups == channels``). On a CPU, MLX's grouped convolution is slow for it:
measured on the tiny checkpoint's full-rate block, 2.1 ms per codec frame, against 0.28 ms for
the same sum written as seven shifted, per-channel multiplies added in kernel order, which gives
the same samples (a test compares them). ``fast_depthwise`` swaps such modules in while narrate's
codec thread decodes and puts mlx-audio's back afterwards, so mlx-audio's own ``generate`` (the
benchmark's plain loop, the sequential path) keeps its convolutions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import mlx.core as mx
import mlx.nn as nn


class DepthwiseConv1d(nn.Module):
    """An ``nn.Conv1d`` with one filter per channel and stride 1, as shifted multiply-adds."""

    def __init__(self, conv: nn.Conv1d):
        super().__init__()
        self.weight = conv.weight  # (channels, kernel, 1)
        if "bias" in conv:
            self.bias = conv.bias
        self.padding = conv.padding
        self.dilation = conv.dilation

    def __call__(self, x: mx.array) -> mx.array:  # x: (batch, time, channels)
        if self.padding:
            x = mx.pad(x, [(0, 0), (self.padding, self.padding), (0, 0)])
        kernel = self.weight.shape[1]
        out = x.shape[1] - (kernel - 1) * self.dilation
        acc = None
        for k in range(kernel):
            start = k * self.dilation
            term = x[:, start : start + out, :] * self.weight[:, k, 0]
            acc = term if acc is None else acc + term
        assert acc is not None
        return acc + self.bias if "bias" in self else acc


def is_depthwise(conv: Any) -> bool:
    return (
        isinstance(conv, nn.Conv1d)
        and conv.stride == 1
        and conv.groups > 1
        and conv.weight.shape[2] == 1
        and conv.weight.shape[0] == conv.groups
    )


def depthwise_swaps(decoder: Any) -> list[tuple[Any, Any, DepthwiseConv1d]]:
    """(owner module, mlx-audio's conv, its replacement) for every depthwise ``conv`` child."""
    return [
        (m, m.conv, DepthwiseConv1d(m.conv))
        for _, m in decoder.named_modules()
        if is_depthwise(getattr(m, "conv", None))
    ]


@contextlib.contextmanager
def fast_depthwise(swaps: list[tuple[Any, Any, DepthwiseConv1d]]) -> Iterator[None]:
    """The replacements in place for the duration (one thread decodes at a time)."""
    for owner, _, fast in swaps:
        owner.conv = fast
    try:
        yield
    finally:
        for owner, original, _ in swaps:
            owner.conv = original
