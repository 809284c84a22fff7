"""The counter-based sampler of narrate's batched decode loop.

Every row of a batch samples from its own random stream: the noise for a token is a pure
function of (row seed, frame, codebook, vocabulary column), computed by hashing those counters,
not drawn from a shared generator. So a sentence comes out bit-identical alone or in any batch,
in any position. Tokens are picked with the Gumbel-max trick (argmax of logits + Gumbel noise),
which samples the softmax distribution exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import mlx.core as mx

# murmur3's 32-bit finalizer constants (fmix32).
MURMUR_MIX_1 = 0x85EBCA6B
MURMUR_MIX_2 = 0xC2B2AE35
# Odd 32-bit multipliers that spread each counter over the whole word before mixing:
STEP_SALT = 0x9E3779B1  # the codec frame: a prime near 2^32 / golden ratio (multiplicative hashing)
STREAM_SALT = 0x7F4A7C15  # the codebook (0: talker, 1..15: code predictor): splitmix64's increment, low half
COLUMN_SALT = 0x27D4EB2F  # the vocabulary column: xxHash32's PRIME32_4
UINT32 = 0xFFFFFFFF
UNIFORM_BITS = 24  # a float32 holds 24 significant bits: the top 24 bits of a hash become (0, 1)


def _mix(x: mx.array) -> mx.array:
    """murmur3's 32-bit finalizer: a bijective avalanche mix of uint32 values."""
    x = x ^ (x >> 16)
    x = x * mx.array(MURMUR_MIX_1, dtype=mx.uint32)
    x = x ^ (x >> 13)
    x = x * mx.array(MURMUR_MIX_2, dtype=mx.uint32)
    return x ^ (x >> 16)


def row_uniform(seeds: mx.array, step: int | mx.array, stream: int, vocab: int) -> mx.array:
    """(rows, vocab) uniforms in (0, 1), a pure function of (row seed, step, stream, column).
    `step`: the frame, one for all rows or (rows,) per row (rows of a continuous batch joined at
    different frames); uint32 arithmetic wraps like the int version's ``& UINT32``."""
    if isinstance(step, int):
        salt = _mix(mx.array((step * STEP_SALT + stream * STREAM_SALT) & UINT32, dtype=mx.uint32))
    else:
        stream_salt = mx.array((stream * STREAM_SALT) & UINT32, dtype=mx.uint32)
        salt = _mix(step.astype(mx.uint32) * mx.array(STEP_SALT, dtype=mx.uint32) + stream_salt)[:, None]
    cols = mx.arange(vocab, dtype=mx.uint32) * mx.array(COLUMN_SALT, dtype=mx.uint32)
    x = _mix(_mix(seeds[:, None] ^ salt) + cols[None, :])
    return ((x >> (32 - UNIFORM_BITS)).astype(mx.float32) + 0.5) * (1.0 / (1 << UNIFORM_BITS))


@dataclass(frozen=True)
class Sampling:
    """Sampling options; the defaults are Qwen3-TTS's published generation_config.json values."""

    temperature: float = 0.9
    top_k: int = 50
    top_p: float = 1.0
    repetition_penalty: float = 1.05


def options(generate_config: dict | None) -> tuple[Sampling, Sampling]:
    """(talker, code predictor) options from a checkpoint's generation_config.json; the code
    predictor ("subtalker") inherits the talker's values and never applies a repetition penalty."""
    cfg = generate_config or {}
    talker = Sampling(
        temperature=cfg.get("temperature", Sampling.temperature),
        top_k=cfg.get("top_k", Sampling.top_k),
        top_p=cfg.get("top_p", Sampling.top_p),
        repetition_penalty=cfg.get("repetition_penalty", Sampling.repetition_penalty),
    )
    sub = Sampling(
        temperature=cfg.get("subtalker_temperature", talker.temperature),
        top_k=cfg.get("subtalker_top_k", talker.top_k),
        top_p=cfg.get("subtalker_top_p", talker.top_p),
        repetition_penalty=1.0,
    )
    return talker, sub


def sample_rows(
    logits: mx.array,
    seeds: mx.array,
    step: int | mx.array,
    stream: int,
    opts: Sampling,
    suppress: mx.array | None = None,
    recent: mx.array | None = None,
) -> mx.array:
    """One token per row from (rows, vocab) logits with the Gumbel-max trick and per-row noise.
    `suppress`: (vocab,) bool; `recent`: (rows, vocab) bool of recently generated tokens."""
    logits = logits.astype(mx.float32)
    if suppress is not None:
        logits = mx.where(suppress[None, :], -mx.inf, logits)
    if recent is not None and opts.repetition_penalty != 1.0:
        p = opts.repetition_penalty
        logits = mx.where(recent, mx.where(logits < 0, logits * p, logits / p), logits)
    if opts.temperature <= 0:
        return mx.argmax(logits, axis=-1)
    logits = logits / opts.temperature
    vocab = logits.shape[-1]
    if 0 < opts.top_k < vocab:
        kth = mx.topk(logits, opts.top_k, axis=-1).min(axis=-1, keepdims=True)
        logits = mx.where(logits < kth, -mx.inf, logits)
    if opts.top_p < 1.0:
        order = mx.argsort(-logits, axis=-1)
        probs = mx.softmax(mx.take_along_axis(logits, order, axis=-1), axis=-1)
        drop_sorted = (mx.cumsum(probs, axis=-1) - probs) > opts.top_p
        drop = mx.put_along_axis(mx.zeros_like(drop_sorted), order, drop_sorted, axis=-1)
        logits = mx.where(drop, -mx.inf, logits)
    gumbel = -mx.log(-mx.log(row_uniform(seeds, step, stream, vocab)))
    return mx.argmax(logits + gumbel, axis=-1)
