"""narrate's batched decode loop for mlx-audio Qwen3-TTS: many sentences of one voice per forward
pass, each row on its own terms.

mlx-audio builds the batch's prefill (``_prepare_batch_inputs``, every row with the injected
x-vector: see mlx_compat.py); from there this loop drives the talker, the code predictor and the
codec itself, so that:

- every row samples from its own counter-based random stream (sampling.py), so a sentence comes
  out the same alone or in any batch;
- every row stops at its own end of speech (EOS) or frame budget (a runaway);
- every row streams its audio in chunks as its frames accumulate (the piecewise codec decode).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import mlx.core as mx
import numpy as np
from narrate.jobs.synthesis import Chunk

from .mlx_compat import xvector_rows
from .sampling import UINT32, options, sample_rows

# The piecewise codec decode: a row's frames are turned into audio in pieces as they arrive;
# each piece is decoded with up to DECODE_CONTEXT earlier frames in front (the codec decoder is
# causal with a limited receptive field; mlx-audio's streaming decode uses the same 25 frames of
# left context), and only the new frames' samples are kept.
DECODE_CONTEXT = 25  # codec frames of left context for each decoded piece
FIRST_CHUNK = 4  # frames in a row's first audio chunk (fast first audio)
LATER_CHUNK = 48  # frames in later chunks (less context re-decoding)

HISTORY = 64  # repetition-penalty window (first-codebook tokens), as in mlx-audio
# The talker's codec vocabulary is the 2048 audio codes followed by 1024 control ids (BOS, EOS,
# pad, think, language tags...). The first codebook never samples a control id except EOS, as in
# mlx-audio's ``_suppress_codec_tokens``.
CONTROL_TOKENS = 1024


@dataclass
class Row:
    """One sentence's place in a batch and what it has produced so far."""

    index: int  # sentence index in the document
    seed: int
    budget: int
    codes: list[mx.array] = field(default_factory=list)  # per frame: (1, 16)
    decoded: int = 0  # frames already turned into audio
    done: bool = False
    eos: bool = False


def suppressed_tokens(vocab: int, eos: int) -> mx.array:
    """(vocab,) bool: the control ids the first codebook may not sample (all but EOS)."""
    return mx.array([(vocab - CONTROL_TOKENS <= i < vocab) and i != eos for i in range(vocab)])


def decode_piece(model, row: Row, end: int) -> np.ndarray:
    """Audio of frames [row.decoded, end), decoded with up to DECODE_CONTEXT frames of context."""
    ctx = min(DECODE_CONTEXT, row.decoded)
    codes = mx.concatenate(row.codes[row.decoded - ctx : end], axis=0)[None]  # (1, T, 16)
    wav = model.speech_tokenizer.decoder.chunked_decode(mx.transpose(codes, (0, 2, 1))).squeeze(1)[0]
    upsample = model.speech_tokenizer.decode_upsample_rate  # samples per codec frame
    wav = wav[ctx * upsample : (ctx + end - row.decoded) * upsample]
    mx.eval(wav)
    row.decoded = end
    return np.array(wav.astype(mx.float32))


def generate_batch(
    model, texts: Sequence[str], rows: list[Row], placeholder: mx.array, language: str = "auto"
) -> Iterator[Chunk]:
    """Synthesize one batch (the voice must be injected by the caller). Yields audio per row;
    each row ends with a ``final`` chunk (``runaway`` when it used its budget without EOS).
    `language`: Qwen3-TTS's name for the batch's language (english, german...) or auto."""
    talker, sub = options(model.generate_config)
    config = model.config.talker_config
    eos = config.codec_eos_token_id
    n = len(rows)
    with xvector_rows(model, placeholder):
        batch = model._prepare_batch_inputs(list(texts), language=language, return_metadata=True)
    input_embeds = batch.input_embeds
    trailing = batch.trailing_text_hidden
    pad_embed = batch.tts_pad_embed
    attention_mask = batch.attention_mask if n > 1 else None
    cache = model.talker.make_cache()
    code_cache = model.talker.code_predictor.make_cache()
    embed_codes = model.talker.get_input_embeddings()
    vocab = config.vocab_size
    suppress = suppressed_tokens(vocab, eos)
    seeds = mx.array([r.seed & UINT32 for r in rows], dtype=mx.uint32)
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
        for c in code_cache:  # a fresh KV cache for every frame, as mlx-audio's _reset_code_cache
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
                pcm = decode_piece(model, row, len(row.codes)) if len(row.codes) > start else np.zeros(0, np.float32)
                yield Chunk(row.index, pcm, len(row.codes) - start, row.done, row.done and not row.eos)
        if all(r.done for r in rows):
            break
        # Rows at their budget stop advancing: treat them as finished for the next step.
        finished = finished | (mx.array([len(r.codes) for r in rows]) >= budgets)
    mx.clear_cache()
