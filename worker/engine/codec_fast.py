"""Faster equivalents of the codec decoder's convolutions and linear layers on a CPU, swapped in
while narrate's codec thread decodes.

On a CPU the Qwen3-TTS codec decoder spends its time in layers that run at the audio sample rate,
where MLX's CPU kernels are slow for these shapes (tiny checkpoint, per codec frame, its
full-rate ConvNeXt block and first decoder convolution):

- a depthwise convolution (kernel 7, one filter per channel): mlx's grouped convolution 1.4-1.9
  ms, the same sum as seven shifted per-channel multiplies added in kernel order 0.4-0.7 ms;
- a convolution (kernel 7, 16 to 16 channels): 3.8 ms; its kernel positions stacked side by side
  (the (time, kernel x channels) patches) times the weight stored as (kernel x channels, out)
  2.6 ms;
- a linear layer (16 to 64 channels and back): 1.4 and 2.0 ms with the weight as stored
  (out, in); 1.0 and 0.9 ms with the same numbers stored as (in, out), so the matrix product
  reads it row by row;
- a transposed convolution whose kernel equals its stride (the upsampling by 5): 2.0 ms; as
  one matrix product and a reshape (no two input steps overlap) 0.23 ms;
- at the real sizes, the decoder blocks' transposed convolutions (kernel twice the stride, 1536 to 768 channels
  and down): MLX's CPU kernel took 1,065 of the 1,217 ms a frame of the whole 0.6B-shape decoder; as one matrix
  product and an overlap-add of its chunks the decoder takes 170-190 ms a frame.

Each gives the same samples as mlx-audio's layer on this CPU, within float rounding (the tests
compare them).

Where MLX's float32 products are its bundled reference BLAS on Linux (no system OpenBLAS:
narrate.worker.blas), the matrix products of these layers (the patches' of a convolution, an
upsampling's, a linear layer's), when large enough to gain, are computed by ``numpy.matmul`` on
numpy's own OpenBLAS (``product``): 10-16x MLX's reference BLAS on the tiny checkpoint's
audio-rate shapes (30,720 x 16 by 16 x 64: 0.9 ms against 8.1 ms, copies in and out included),
the same within float rounding.

The decoder's stages (each upsampling ConvNeXt block, each decoder block) are also evaluated one at
a time (``Settled``) rather than as one graph of a few hundred operations. MLX caps the tasks in
flight across all of a process's streams (a counted task is 10 operations; past 10 of them an
``eval`` waits for any task to finish): one decode's whole graph held the decode loop's step,
on the other thread, to the pace of the codec's audio-rate tasks. Measured in one process on the
2-core CPU (84 sentences, batch 8): synthesis 26.2 s one graph, 21.1 s stage by stage.

They are used only on the CPU (a GPU's convolutions are fast) and only while narrate decodes
(``fast_layers``): mlx-audio's own ``generate`` (the benchmark's plain loop) keeps its layers.

What they rely on in mlx-audio's decoder (the ``conv`` attribute its convolution modules call, the
stage lists ``upsample`` and ``decoder`` that ``streaming_step`` runs) is checked with the other
internals (mlx_compat.py: ``REQUIRED_INTERNALS["codec_layers"]``, and ``structure_problems`` on a
loaded decoder): a rename in mlx-audio fails loudly rather than quietly losing the speed-up.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from narrate.worker import blas

Swap = tuple[Any, str | int, Any, Any]  # (owner, attribute or list index, mlx-audio's value, the faster one)
# Below this many multiply-adds a product stays in MLX (numpy's round trip costs tens of microseconds).
NUMPY_MIN_MACS = 1 << 16


def through_numpy(x: mx.array, w: mx.array, w_np: np.ndarray | None) -> bool:
    """Whether ``product`` computes x @ w by numpy's OpenBLAS: `w_np` (w as numpy holds it) is given and the
    product is large enough to gain."""
    return w_np is not None and x.dtype == mx.float32 and x.size * w.shape[-1] >= NUMPY_MIN_MACS


def product(x: mx.array, w: mx.array, w_np: np.ndarray | None) -> mx.array:
    """x @ w; by numpy's OpenBLAS where ``through_numpy`` says so."""
    if w_np is None or not through_numpy(x, w, w_np):
        return x @ w
    mx.eval(x)
    return mx.array(np.matmul(np.asarray(x), w_np))


def _numpy_copy(w: mx.array) -> np.ndarray | None:
    """`w` for ``product`` when this process multiplies through numpy (blas.numpy_products), else None."""
    return np.array(w) if w.dtype == mx.float32 and blas.numpy_products() else None


def _shifted(x: mx.array, kernel: int, dilation: int) -> tuple[int, list[mx.array]]:
    out = x.shape[1] - (kernel - 1) * dilation
    return out, [x[:, k * dilation : k * dilation + out, :] for k in range(kernel)]


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
        _, taps = _shifted(x, self.weight.shape[1], self.dilation)
        acc = taps[0] * self.weight[:, 0, 0]
        for k in range(1, len(taps)):
            acc = acc + taps[k] * self.weight[:, k, 0]
        return acc + self.bias if "bias" in self else acc


class PatchConv1d(nn.Module):
    """An ``nn.Conv1d`` without groups and with stride 1, as one matrix product of the shifted
    inputs side by side with the weight stored (kernel x in, out)."""

    def __init__(self, conv: nn.Conv1d):
        super().__init__()
        out, kernel, cin = conv.weight.shape
        self.kernel = kernel
        self.flat = mx.contiguous(conv.weight.reshape(out, kernel * cin).T)
        self.flat_np = _numpy_copy(self.flat)
        if "bias" in conv:
            self.bias = conv.bias
        self.padding = conv.padding
        self.dilation = conv.dilation

    def __call__(self, x: mx.array) -> mx.array:
        if self.padding:
            x = mx.pad(x, [(0, 0), (self.padding, self.padding), (0, 0)])
        _, taps = _shifted(x, self.kernel, self.dilation)
        patches = taps[0] if self.kernel == 1 else mx.concatenate(taps, axis=-1)
        y = product(patches, self.flat, self.flat_np)
        return y + self.bias if "bias" in self else y


class StridedTransposeConv1d(nn.Module):
    """An ``nn.ConvTranspose1d`` whose kernel equals its stride (an upsampling without overlap):
    each input step gives `stride` output steps on its own, one matrix product and a reshape."""

    def __init__(self, conv: nn.ConvTranspose1d):
        super().__init__()
        out, kernel, cin = conv.weight.shape
        self.kernel, self.stride, self.out = kernel, conv.stride, out
        self.flat = mx.contiguous(conv.weight.transpose(2, 1, 0).reshape(cin, kernel * out))  # (in, kernel x out)
        self.flat_np = _numpy_copy(self.flat)
        if "bias" in conv:
            self.bias = conv.bias

    def __call__(self, x: mx.array) -> mx.array:
        b, t, _ = x.shape
        y = product(x, self.flat, self.flat_np).reshape(b, t * self.kernel, self.out)
        return y + self.bias if "bias" in self else y


class OverlapTransposeConv1d(StridedTransposeConv1d):
    """An ``nn.ConvTranspose1d`` whose kernel is a multiple `m` of its stride (the decoder blocks' upsamplings:
    kernel twice the stride): one matrix product gives each input step's `kernel` output steps, whose `m` chunks
    of `stride` steps are added in at `m` successive offsets (an overlap-add), as the transposed convolution sums
    them. MLX's CPU kernel for these shapes was most of the codec's time at the real sizes."""

    def __init__(self, conv: nn.ConvTranspose1d):
        super().__init__(conv)  # the same product: the weight as (in, kernel x out)
        self.chunks = self.kernel // self.stride

    def __call__(self, x: mx.array) -> mx.array:
        b, t, _ = x.shape
        s, m = self.stride, self.chunks
        y = product(x, self.flat, self.flat_np).reshape(b, t, m, s * self.out)
        summed = mx.pad(y[:, :, 0].reshape(b, t * s, self.out), [(0, 0), (0, (m - 1) * s), (0, 0)])
        for c in range(1, m):
            part = y[:, :, c].reshape(b, t * s, self.out)
            summed = summed + mx.pad(part, [(0, 0), (c * s, (m - 1 - c) * s), (0, 0)])
        return summed + self.bias if "bias" in self else summed


class FastLinear(nn.Module):
    """An ``nn.Linear`` with its weight stored (in, out), so the product reads it row by row; the
    same ``addmm`` as mlx's layer in MLX, or ``product`` through numpy."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.flat = mx.contiguous(linear.weight.T)  # (in, out)
        self.flat_np = _numpy_copy(self.flat)
        if "bias" in linear:
            self.bias = linear.bias

    def __call__(self, x: mx.array) -> mx.array:
        if through_numpy(x, self.flat, self.flat_np):
            y = product(x, self.flat, self.flat_np)
            return y + self.bias if "bias" in self else y
        return mx.addmm(self.bias, x, self.flat) if "bias" in self else x @ self.flat


class Settled(nn.Module):
    """A decoder stage whose output is computed when it returns (``mx.eval``): the codec's graph
    goes to MLX a stage at a time (the module docstring says why)."""

    def __init__(self, stage: Any):
        super().__init__()
        self.stage = stage

    def step(self, x: mx.array) -> mx.array:
        y: mx.array = self.stage.step(x)
        mx.eval(y)
        return y

    def __call__(self, x: mx.array) -> mx.array:
        y: mx.array = self.stage(x)
        mx.eval(y)
        return y


def stages(decoder: Any) -> list[tuple[list[Any], int]]:
    """(list, index) of each stage streaming_step runs that holds the most work: the upsampling
    ConvNeXt blocks and the decoder blocks (between its first convolution and its last two layers)."""
    found: list[tuple[list[Any], int]] = []
    for pair in getattr(decoder, "upsample", []):
        if isinstance(pair, list) and len(pair) == 2:
            found.append((pair, 1))
    blocks = getattr(decoder, "decoder", [])
    if isinstance(blocks, list):
        found.extend((blocks, i) for i in range(1, len(blocks) - 2))
    return [(owner, i) for owner, i in found if hasattr(owner[i], "step")]


# The kinds of layer with a faster equivalent here, as the internals check names them when a
# loaded decoder has none of one.
LAYER_KINDS = {
    "depthwise": "depthwise convolution (ConvNeXtBlock.dwconv.conv)",
    "plain": "convolution without groups (CausalConv1d.conv, DecoderInitialConv.conv)",
    "strided_transpose": "upsampling transposed convolution with kernel = stride (CausalTransposeConv1d.conv)",
    "linear": "linear layer (ConvNeXtBlock.pwconv1)",
}


def is_depthwise(conv: Any) -> bool:
    return (
        isinstance(conv, nn.Conv1d)
        and conv.stride == 1
        and conv.groups > 1
        and conv.weight.shape[2] == 1
        and conv.weight.shape[0] == conv.groups
    )


def is_plain(conv: Any) -> bool:
    return isinstance(conv, nn.Conv1d) and conv.stride == 1 and conv.groups == 1


def is_strided_transpose(conv: Any) -> bool:
    return (
        isinstance(conv, nn.ConvTranspose1d)
        and conv.stride == conv.weight.shape[1]
        and conv.padding == 0
        and conv.dilation == 1
        and conv.output_padding == 0
    )


def is_overlap_transpose(conv: Any) -> bool:
    return (
        isinstance(conv, nn.ConvTranspose1d)
        and conv.weight.shape[1] > conv.stride
        and conv.weight.shape[1] % conv.stride == 0
        and conv.padding == 0
        and conv.dilation == 1
        and conv.output_padding == 0
        and getattr(conv, "groups", 1) == 1
    )


def swaps_for(decoder: Any) -> list[Swap]:
    """Every layer of the decoder that has a faster equivalent here (none off the CPU); built
    once per decoder (the reordered weights are copies: the layers' weights twice in memory)."""
    if mx.default_device().type != mx.cpu:
        return []
    cached = getattr(decoder, "_narrate_fast_layers", None)
    if cached is None:
        cached = _build(decoder)
        object.__setattr__(decoder, "_narrate_fast_layers", cached)
    return cached


def _layers(decoder: Any) -> Iterator[tuple[Any, str | int, Any, str]]:
    """(module or list, attribute or index, mlx-audio's layer, its kind) of every layer of the decoder that has a
    faster equivalent here."""
    for _, m in decoder.named_modules():
        conv = getattr(m, "conv", None)
        if is_depthwise(conv):
            yield m, "conv", conv, "depthwise"
        elif is_plain(conv):
            yield m, "conv", conv, "plain"
        elif is_strided_transpose(conv):
            yield m, "conv", conv, "strided_transpose"
        elif is_overlap_transpose(conv):
            yield m, "conv", conv, "overlap_transpose"
        for name, child in m.children().items():  # a linear layer, or a list's
            owned = [(child, i, c) for i, c in enumerate(child)] if isinstance(child, list) else [(m, name, child)]
            yield from ((o, k, c, "linear") for o, k, c in owned if type(c) is nn.Linear and "weight" in c)


def _faster(original: Any, kind: str) -> Any:
    if kind == "depthwise":
        return DepthwiseConv1d(original)
    if kind == "plain":
        return PatchConv1d(original)
    if kind == "strided_transpose":
        return StridedTransposeConv1d(original)
    if kind == "overlap_transpose":
        return OverlapTransposeConv1d(original)
    return FastLinear(original)


def _build(decoder: Any) -> list[Swap]:
    out: list[Swap] = [(m, key, original, _faster(original, kind)) for m, key, original, kind in _layers(decoder)]
    out.extend((owner, i, owner[i], Settled(owner[i])) for owner, i in stages(decoder))
    # computed now, on this thread's stream: the codec thread has its own stream
    mx.eval([new if isinstance(new, mx.array) else new.parameters() for *_, new in out])
    return out


def structure_problems(decoder: Any) -> list[str]:
    """What the faster layers rely on that this loaded decoder (behind mx.compile or not) lacks, in
    the internals check's words (mlx_compat.check_internals with a model): the stage lists that
    streaming_step runs, and at least one layer of each kind replaced here. On any device: a
    release that renamed one must fail the check, not quietly lose the CPU speed-up."""
    decoder = getattr(getattr(decoder, "streaming_step", None), "__self__", decoder)  # behind mx.compile
    name = "Model.speech_tokenizer.decoder"
    problems = []
    upsample = getattr(decoder, "upsample", None)
    pairs = isinstance(upsample, list) and all(isinstance(p, list) and len(p) == 2 for p in upsample)
    if upsample is not None and not (pairs and upsample and all(hasattr(p[1], "step") for p in upsample)):
        problems.append(f"{name}.upsample is not a list of [transposed convolution, ConvNeXt block with step] pairs")
    blocks = getattr(decoder, "decoder", None)
    if blocks is not None and not (
        isinstance(blocks, list) and len(blocks) >= 3 and all(hasattr(b, "step") for b in blocks[1:-2])
    ):
        problems.append(f"{name}.decoder is not a list [first convolution, decoder blocks with step, ..., last two]")
    found = {kind for *_, kind in _layers(decoder)}
    problems += [
        f"{name} has no {what}: codec_fast.py's faster CPU layer for it would never be used"
        for kind, what in LAYER_KINDS.items()
        if kind not in found
    ]
    return problems


def _put(owner: Any, key: str | int, value: Any) -> None:
    if isinstance(key, int):
        owner[key] = value
    else:
        setattr(owner, key, value)


@contextlib.contextmanager
def fast_layers(swaps: list[Swap]) -> Iterator[None]:
    """The faster layers in place for the duration (one thread decodes at a time)."""
    for owner, key, _, fast in swaps:
        _put(owner, key, fast)
    try:
        yield
    finally:
        for owner, key, original, _ in swaps:
            _put(owner, key, original)
