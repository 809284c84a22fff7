"""Batched x-vector synthesis for mlx-audio Qwen3-TTS: many sentences of one voice per forward pass.

mlx-audio 0.6.2 batches cloned voices only in ICL mode (reference audio *and* transcript); its
x-vector path refuses to batch. Its ``_prepare_batch_inputs`` builds each row with
``_prepare_generation_inputs``, which adds the speaker embedding when it is given reference
audio; the batch builder passes none. This module is the narrow patch: while a batch is built,
the instance's ``_prepare_generation_inputs`` is wrapped to pass a placeholder reference, and
``extract_speaker_embedding`` is shadowed (see engine.injected_voice) to return narrate's cached
embedding, already cast to the talker's dtype. The decode loop is narrate's own, so that:

- every row samples from its own counter-based random stream (sentence seed, frame, codebook),
  so a sentence comes out the same alone or in any batch;
- every row stops at its own EOS or frame budget (runaways are flagged);
- every row streams its audio in chunks as its frames accumulate.

The mlx-audio internals used are listed in ``REQUIRED_INTERNALS``; ``check_internals`` (run at
engine start and by the tests) fails loudly if a release changes them.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np

REQUIRED_INTERNALS = {
    "Model._prepare_batch_inputs": ("texts", "language", "return_metadata"),
    "Model._prepare_generation_inputs": ("text", "language", "speaker", "ref_audio", "ref_text", "instruct"),
    "Model._next_batch_input_embeds": (
        "trailing_text_hidden",
        "tts_pad_embed",
        "trailing_indices",
        "code_tokens",
        "pad_when_index_clamped",
    ),
    "Model.extract_speaker_embedding": ("audio", "sr"),
    "Qwen3BatchInputs": (
        "input_embeds",
        "trailing_text_hidden",
        "tts_pad_embed",
        "attention_mask",
        "prefill_lens",
    ),
}

DECODE_CONTEXT = 25  # codec frames of left context when a row's audio is decoded in pieces
FIRST_CHUNK = 4  # frames in a row's first audio chunk (fast first audio)
LATER_CHUNK = 48  # frames in later chunks (less context re-decoding)
HISTORY = 64  # repetition-penalty window, as in mlx-audio


class InternalsChanged(RuntimeError):
    """The installed mlx-audio no longer has what narrate's batching relies on."""


def check_internals() -> None:
    from mlx_audio.tts.models.qwen3_tts import qwen3_tts

    problems = []
    for name, params in REQUIRED_INTERNALS.items():
        owner, _, attr = name.partition(".")
        obj = getattr(qwen3_tts, owner, None)
        if obj is not None and attr:
            obj = getattr(obj, attr, None)
        if obj is None:
            problems.append(f"{name} is missing")
            continue
        if attr:
            have = set(inspect.signature(obj).parameters)
        else:
            have = set(getattr(obj, "__dataclass_fields__", {}))
        missing = [p for p in params if p not in have]
        if missing:
            problems.append(f"{name} lacks {missing}")
    if problems:
        raise InternalsChanged(
            "mlx-audio's Qwen3-TTS internals changed; narrate's batched synthesis needs updating: "
            + "; ".join(problems)
        )


# ---------------------------------------------------------------------------- sampling


def _mix(x: mx.array) -> mx.array:
    """murmur3's 32-bit finalizer: a bijective avalanche mix of uint32 values."""
    x = x ^ (x >> 16)
    x = x * mx.array(0x85EBCA6B, dtype=mx.uint32)
    x = x ^ (x >> 13)
    x = x * mx.array(0xC2B2AE35, dtype=mx.uint32)
    return x ^ (x >> 16)


def row_uniform(seeds: mx.array, step: int, stream: int, vocab: int) -> mx.array:
    """(rows, vocab) uniforms in (0, 1), a pure function of (row seed, step, stream, column)."""
    salt = _mix(mx.array((step * 0x9E3779B1 + stream * 0x7F4A7C15) & 0xFFFFFFFF, dtype=mx.uint32))
    cols = mx.arange(vocab, dtype=mx.uint32) * mx.array(0x27D4EB2F, dtype=mx.uint32)
    x = _mix(_mix(seeds[:, None] ^ salt) + cols[None, :])
    return ((x >> 8).astype(mx.float32) + 0.5) * (1.0 / (1 << 24))


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.9
    top_k: int = 50
    top_p: float = 1.0
    repetition_penalty: float = 1.05


def sample_rows(
    logits: mx.array,
    seeds: mx.array,
    step: int,
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


# ---------------------------------------------------------------------------- decode loop


@dataclass
class Row:
    index: int  # sentence index in the document
    seed: int
    budget: int
    codes: list[mx.array] = field(default_factory=list)  # per frame: (1, 16)
    decoded: int = 0  # frames already turned into audio
    done: bool = False
    eos: bool = False


@dataclass(frozen=True)
class RowChunk:
    index: int
    pcm: np.ndarray
    frames: int
    final: bool
    runaway: bool


@contextlib.contextmanager
def shadow(obj, name: str, value):
    """Set an instance attribute for the duration of the block, then restore what was there."""
    missing = object()
    previous = obj.__dict__.get(name, missing)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if previous is missing:
            delattr(obj, name)
        else:
            setattr(obj, name, previous)


def xvector_rows(model, placeholder: mx.array):
    """While active, every row the batch builder makes carries the (injected) x-vector."""
    inner = model._prepare_generation_inputs

    def with_reference(text, language="auto", speaker=None, ref_audio=None, ref_text=None, instruct=None):
        ref = placeholder if ref_audio is None else ref_audio
        return inner(text, language=language, speaker=speaker, ref_audio=ref, ref_text=ref_text, instruct=instruct)

    return shadow(model, "_prepare_generation_inputs", with_reference)


def _sampling(model) -> tuple[Sampling, Sampling]:
    cfg = model.generate_config or {}
    talker = Sampling(
        temperature=cfg.get("temperature", 0.9),
        top_k=cfg.get("top_k", 50),
        top_p=cfg.get("top_p", 1.0),
        repetition_penalty=cfg.get("repetition_penalty", 1.05),
    )
    sub = Sampling(
        temperature=cfg.get("subtalker_temperature", talker.temperature),
        top_k=cfg.get("subtalker_top_k", talker.top_k),
        top_p=cfg.get("subtalker_top_p", talker.top_p),
        repetition_penalty=1.0,
    )
    return talker, sub


def _decode_piece(model, row: Row, end: int) -> np.ndarray:
    """Audio of frames [row.decoded, end), decoded with up to DECODE_CONTEXT frames of context."""
    ctx = min(DECODE_CONTEXT, row.decoded)
    codes = mx.concatenate(row.codes[row.decoded - ctx : end], axis=0)[None]  # (1, T, 16)
    wav = model.speech_tokenizer.decoder.chunked_decode(mx.transpose(codes, (0, 2, 1))).squeeze(1)[0]
    upsample = model.speech_tokenizer.decode_upsample_rate
    wav = wav[ctx * upsample : (ctx + end - row.decoded) * upsample]
    mx.eval(wav)
    row.decoded = end
    return np.array(wav.astype(mx.float32))


def generate_batch(model, texts: Sequence[str], rows: list[Row], placeholder: mx.array) -> Iterator[RowChunk]:
    """Synthesize one batch (the voice must be injected by the caller). Yields audio per row."""
    talker, sub = _sampling(model)
    config = model.config.talker_config
    eos = config.codec_eos_token_id
    n = len(rows)
    with xvector_rows(model, placeholder):
        batch = model._prepare_batch_inputs(list(texts), language="auto", return_metadata=True)
    input_embeds = batch.input_embeds
    trailing = batch.trailing_text_hidden
    pad_embed = batch.tts_pad_embed
    attention_mask = batch.attention_mask if n > 1 else None
    cache = model.talker.make_cache()
    code_cache = model.talker.code_predictor.make_cache()
    embed_codes = model.talker.get_input_embeddings()
    vocab = config.vocab_size
    suppress = mx.array([(vocab - 1024 <= i < vocab) and i != eos for i in range(vocab)])
    seeds = mx.array([r.seed & 0xFFFFFFFF for r in rows], dtype=mx.uint32)
    budgets = mx.array([r.budget for r in rows])
    history = mx.full((n, HISTORY), vocab, dtype=mx.int32)  # recent first-codebook tokens; vocab = none
    no_recent = mx.zeros((n, vocab + 1), dtype=mx.bool_)
    true = mx.ones((n, HISTORY), dtype=mx.bool_)
    finished = mx.zeros((n,), dtype=mx.bool_)
    trailing_idx = mx.zeros((n, 1), dtype=mx.int32)
    eos_fill = mx.full((n,), eos, dtype=mx.int32)
    max_steps = max(r.budget for r in rows)

    for step in range(max_steps):
        logits, hidden = model.talker(input_embeds, cache=cache, attention_mask=attention_mask)
        recent = mx.put_along_axis(no_recent, history, true, axis=-1)[:, :vocab]
        first = sample_rows(logits[:, -1, :], seeds, step, 0, talker, suppress=suppress, recent=recent)
        first = mx.where(finished, eos_fill, first.astype(mx.int32))
        hit_eos = first == eos
        finished = finished | hit_eos
        # Code predictor: the other 15 codebooks of this frame, one token per row each.
        for c in code_cache:
            c.keys, c.values, c.offset = None, None, 0
        tokens = [first[:, None]]
        code_input = mx.concatenate([hidden[:, -1:, :], embed_codes(tokens[0])], axis=1)
        for g in range(config.num_code_groups - 1):
            if g > 0:
                code_input = model.talker.code_predictor.codec_embedding[g - 1](tokens[-1])
            code_logits, code_cache, _ = model.talker.code_predictor(code_input, cache=code_cache, generation_step=g)
            tokens.append(sample_rows(code_logits[:, -1, :], seeds, step, g + 1, sub)[:, None].astype(mx.int32))
        all_codes = mx.concatenate(tokens, axis=1)  # (rows, 16)
        input_embeds = model._next_batch_input_embeds(
            trailing, pad_embed, trailing_idx, tokens, pad_when_index_clamped=True
        )
        trailing_idx = trailing_idx + (~finished).astype(mx.int32)[:, None]
        if attention_mask is not None:
            attention_mask = mx.concatenate([attention_mask, mx.ones((n, 1))], axis=1)
        # Rows still running append this frame's first code to their repetition window.
        running = mx.array([not r.done for r in rows]) & ~hit_eos
        history = mx.where(running[:, None], mx.concatenate([history[:, 1:], first[:, None]], axis=1), history)
        mx.eval(all_codes, input_embeds, finished, hit_eos, history)
        eos_now = hit_eos.tolist()
        for b, row in enumerate(rows):
            if row.done:
                continue
            if eos_now[b]:
                row.done, row.eos = True, True
            else:
                row.codes.append(all_codes[b : b + 1])
                if len(row.codes) >= row.budget:
                    row.done = True
            chunk = FIRST_CHUNK if row.decoded == 0 else LATER_CHUNK
            if row.done or len(row.codes) - row.decoded >= chunk:
                start = row.decoded
                pcm = _decode_piece(model, row, len(row.codes)) if len(row.codes) > start else np.zeros(0, np.float32)
                yield RowChunk(row.index, pcm, len(row.codes) - start, row.done, row.done and not row.eos)
        if all(r.done for r in rows):
            break
        # Rows at their budget stop advancing: treat them as finished for the next step.
        finished = finished | (mx.array([len(r.codes) for r in rows]) >= budgets)
    mx.clear_cache()
