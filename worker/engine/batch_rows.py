"""The device state of a running batch, row by row, for continuous batching.

Rows of one batch sit at different points of their sentences: each row's talker KV cache holds
its own number of positions (`kv_lens`), and the batch's caches are left-padded to the longest
row (`length`). The attention mask hides each row's padding and gives it its own positions, as
mlx-audio's batched prefill does, so a row computes the same numbers whatever else is in the
batch. Rows join (``join``: their prefill was computed apart, then their caches are padded and
stacked) and leave (``keep``: the rows that go on are gathered and the padding every remaining
row has is cut off) between steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mlx.core as mx


@dataclass
class Rows:
    """The running rows' tensors, in row order (n rows)."""

    cache: list[Any]  # per talker layer: mlx-audio's KVCache with (n, heads, length, dim) keys and values
    kv_lens: list[int]  # positions of each row in the caches (its prefill and frames so far)
    embeds: mx.array  # (n, 1, hidden): each row's next talker input
    trailing: mx.array  # (n, T, hidden): text still to be fed (right-padded with the pad embedding)
    trailing_idx: mx.array  # (n, 1) int32: each row's position in `trailing`
    history: mx.array  # (n, HISTORY) int32: each row's recent first-codebook tokens

    @property
    def length(self) -> int:
        return max(self.kv_lens) if self.kv_lens else 0

    def __len__(self) -> int:
        return len(self.kv_lens)

    def attention_mask(self) -> mx.array | None:
        """(n, length + 1) float mask for the next step (1: a real position, 0: left padding);
        None for a single row, as mlx-audio runs one sequence (no padding then)."""
        if len(self) == 1:
            return None
        width = self.length + 1
        pads = mx.array([self.length - k for k in self.kv_lens], dtype=mx.int32)
        return (mx.arange(width, dtype=mx.int32)[None, :] >= pads[:, None]).astype(mx.float32)

    def advanced(self) -> None:
        """Every row took one more position (the step just run)."""
        self.kv_lens = [k + 1 for k in self.kv_lens]


def _state(c: Any) -> tuple[mx.array, mx.array]:
    return c.keys[..., : c.offset, :], c.values[..., : c.offset, :]


def _set(c: Any, keys: mx.array, values: mx.array) -> None:
    c.keys, c.values, c.offset = keys, values, keys.shape[2]


def _pad_left(x: mx.array, pad: int) -> mx.array:
    if pad == 0:
        return x
    b, h, _, d = x.shape
    return mx.concatenate([mx.zeros((b, h, pad, d), dtype=x.dtype), x], axis=2)


def _pad_right(trailing: mx.array, width: int, pad_embed: mx.array) -> mx.array:
    n, t, h = trailing.shape
    if t == width:
        return trailing
    return mx.concatenate([trailing, mx.broadcast_to(pad_embed, (n, width - t, h)).astype(trailing.dtype)], axis=1)


def join(running: Rows | None, new: Rows, pad_embed: mx.array) -> Rows:
    """The running rows followed by `new` (prefilled apart), caches padded to one length."""
    if running is None or not len(running):
        return new
    length = max(running.length, new.length)
    for a, b in zip(running.cache, new.cache, strict=True):
        (ka, va), (kb, vb) = _state(a), _state(b)
        pa, pb = length - running.length, length - new.length
        keys = mx.concatenate([_pad_left(ka, pa), _pad_left(kb, pb)], axis=0)
        values = mx.concatenate([_pad_left(va, pa), _pad_left(vb, pb)], axis=0)
        _set(a, keys, values)
    width = max(running.trailing.shape[1], new.trailing.shape[1])
    trailing = mx.concatenate(
        [_pad_right(running.trailing, width, pad_embed), _pad_right(new.trailing, width, pad_embed)], axis=0
    )
    return Rows(
        cache=running.cache,
        kv_lens=running.kv_lens + new.kv_lens,
        embeds=mx.concatenate([running.embeds, new.embeds], axis=0),
        trailing=trailing,
        trailing_idx=mx.concatenate([running.trailing_idx, new.trailing_idx], axis=0),
        history=mx.concatenate([running.history, new.history], axis=0),
    )


def keep(rows: Rows, idx: list[int]) -> Rows:
    """Only the rows at `idx` (in that order), without the left padding all of them have."""
    kv_lens = [rows.kv_lens[i] for i in idx]
    cut = rows.length - max(kv_lens)  # columns that are padding in every remaining row
    sel = mx.array(idx, dtype=mx.int32)
    for c in rows.cache:
        keys, values = _state(c)
        _set(c, keys[sel, :, cut:, :], values[sel, :, cut:, :])
    return Rows(
        cache=rows.cache,
        kv_lens=kv_lens,
        embeds=rows.embeds[sel],
        trailing=rows.trailing[sel],
        trailing_idx=rows.trailing_idx[sel],
        history=rows.history[sel],
    )
