"""narrate's batched decode loop for mlx-audio Qwen3-TTS: many sentences per forward pass, each
row on its own terms and in its own voice, rows joining and leaving between steps (continuous
batching).

mlx-audio builds each joining group's prefill (``_prepare_batch_inputs``, every row with its own
voice: a clone's cached x-vector, a preset speaker with its instruction, or a design's
description; see mlx_compat.VoiceRows); from there this loop drives the talker, the code predictor
and the codec itself, so that:

- every row samples from its own counter-based random stream (sampling.py), keyed by its own
  frame number, so a sentence comes out the same alone, in any batch, joining early or late;
- every row stops at its own end of speech (EOS) or frame budget (a runaway) and, in the
  continuous mode, leaves the batch at once: no step computes a finished row (batch_rows.py);
  the static mode keeps finished rows in the batch until its last row ends (the old batches,
  kept for the benchmark and the equivalence tests);
- every row streams its audio in chunks as its frames accumulate, each frame decoded once by
  the row's own streaming codec state, on a background thread (codec_stream.py).

One host sync a step: the EOS flags are read back to retire rows (reading them every few steps
instead measured no faster on a CPU and would compute finished rows meanwhile).

With a ``StageClock`` (``narrate bench``'s stage profile only) every stage is evaluated on its own and timed:
the talker's step, the joining rows' prefill, the first codebook's sampling, the code predictor, the next
inputs, the codec (decoding inline); what each costs, not the pipeline's overlapped wall time.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict, deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx
import numpy as np
from narrate.jobs.book.synthesis import Chunk
from narrate.worker.engine.batch_rows import Rows, join, keep
from narrate.worker.engine.code_predictor_step import code_predictor_step
from narrate.worker.engine.codec_stream import CodecWorker, RowCodec
from narrate.worker.engine.mlx_compat import VoiceRows
from narrate.worker.engine.row_voices import RowVoice
from narrate.worker.engine.sampling import UINT32, options, sample_rows

FIRST_CHUNK = 4  # frames in a row's first audio chunk (fast first audio)
LATER_CHUNK = 24  # frames in later chunks (fewer, larger codec calls)

RIDER_SEATS = 2  # rows riders (another job's sentences: admission.py) may add beyond the batch size
HISTORY = 64  # repetition-penalty window (first-codebook tokens), as in mlx-audio
# The talker's codec vocabulary is the 2048 audio codes followed by 1024 control ids (BOS, EOS,
# pad, think, language tags...). The first codebook never samples a control id except EOS, as in
# mlx-audio's ``_suppress_codec_tokens``.
CONTROL_TOKENS = 1024


@dataclass
class Row:
    """One sentence in the batch and what it has produced so far."""

    index: int  # sentence index in the document
    seed: int
    budget: int
    voice: RowVoice  # what the row is spoken in (rows of one batch may differ)
    text: str = ""
    language: str = "auto"  # Qwen3-TTS's name (english, german...) or auto
    frames: int = 0  # frames generated (also the sampler's frame counter)
    fresh: list[np.ndarray] = field(default_factory=list)  # frames not yet decoded, each (16,)
    done: bool = False
    eos: bool = False
    codec: RowCodec | None = None
    chunks: int = 0  # audio chunks handed out
    codes: list[np.ndarray] | None = None  # every frame's 16 codes, where a caller asks for them (a list)


class StageClock:
    """Seconds per stage of the decode loop, each stage evaluated before the next starts (``mark``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.frames = 0  # row-frames computed (a row's frame at a step)
        self._t = time.perf_counter()

    def start(self) -> None:
        self._t = time.perf_counter()

    def mark(self, stage: str, *arrays: mx.array) -> None:
        """`stage` ends here: its arrays evaluated, the time since the last mark counted to it."""
        if arrays:
            mx.eval(*arrays)
        now = time.perf_counter()
        self.seconds[stage] += now - self._t
        self._t = now


def suppressed_tokens(vocab: int, eos: int) -> mx.array:
    """(vocab,) bool: the control ids the first codebook may not sample (all but EOS)."""
    return mx.array([(vocab - CONTROL_TOKENS <= i < vocab) and i != eos for i in range(vocab)])


class DecodeLoop:
    """A batch that rows join (`add`) and leave; `step` advances every running row one frame."""

    def __init__(
        self,
        model: Any,
        size: int,
        continuous: bool = True,
        threaded_codec: bool = True,
        clock: StageClock | None = None,
    ):
        self.model = model
        self.clock = clock  # the stage profile's (its codec decodes inline): each stage evaluated and timed
        self.voices = VoiceRows(model)  # the rows' voices as mlx-audio's prefill builder takes them
        self.size = size  # the most rows at once (the code predictor's compiled buckets)
        self.continuous = continuous
        self.talker_opts, self.sub_opts = options(model.generate_config)
        self.predict = code_predictor_step(model, self.sub_opts)
        self.config = model.config.talker_config
        self.eos = self.config.codec_eos_token_id
        self.suppress = suppressed_tokens(self.config.vocab_size, self.eos)
        self.codec = CodecWorker(model.speech_tokenizer.decoder, threaded=threaded_codec and clock is None)
        self.rows: list[Row] = []  # the batch, in the order of self.state's rows
        self.state: Rows | None = None
        self.pad_embed: mx.array | None = None
        self.pending: list[Row] = []  # prefilled at the next step
        self.outbox: deque[tuple[Row, Future, int, bool]] = deque()
        self.steps = 0  # steps taken (admission's clock)
        self.computed: list[tuple[int, int]] = []  # per step: (rows computed, of them already done)
        self.padding: list[int] = []  # per step: rows the code predictor's bucket added (computed, dropped)

    def add(self, rows: Sequence[Row]) -> None:
        self.pending.extend(rows)

    @property
    def running(self) -> int:
        """Rows in the batch or waiting for their prefill that have not finished."""
        return sum(not r.done for r in self.rows) + len(self.pending)

    @property
    def busy(self) -> bool:
        return bool(self.rows or self.pending)

    def step(self) -> Iterator[Chunk]:
        """One frame for every row (prefilling the rows that join), then the audio that is ready."""
        logits, hidden = [], []
        if self.clock:
            self.clock.start()
        if self.rows:
            s = self.state
            assert s is not None  # rows in the batch have their state
            lg, hd = self.model.talker(s.embeds, cache=s.cache, attention_mask=s.attention_mask())
            s.advanced()
            logits.append(lg[:, -1, :])
            hidden.append(hd[:, -1:, :])
            if self.clock:
                self.clock.mark("talker", logits[-1], hidden[-1])
        joining, self.pending = self.pending, []
        for _, same in itertools.groupby(sorted(joining, key=lambda r: r.language), key=lambda r: r.language):
            group = list(same)
            lg, hd = self._prefill(group)
            logits.append(lg)
            hidden.append(hd)
            self.rows.extend(group)
        if self.clock and joining:
            self.clock.mark("prefill", *logits, *hidden)
        self.steps += 1
        self.computed.append((len(self.rows), sum(r.done for r in self.rows)))
        self._advance(mx.concatenate(logits, axis=0), mx.concatenate(hidden, axis=0))
        yield from self.ready()

    def _prefill(self, group: list[Row]) -> tuple[mx.array, mx.array]:
        """Prefill rows that join: their logits and hidden state, their caches joined to the batch."""
        model = self.model
        speakers = [self.voices.speaker(r.voice.embedding, r.voice.speaker) for r in group]
        with self.voices.active():
            batch = model._prepare_batch_inputs(
                [r.text for r in group],
                language=group[0].language,
                speakers=speakers,
                instructs=[r.voice.instruct for r in group],
                return_metadata=True,
            )
        cache = model.talker.make_cache()
        mask = batch.attention_mask if len(group) > 1 else None
        # The talker's layers over every prefill position (they fill the KV cache), its codec head
        # only on the last one: the only logits sampled (mlx-audio's talker call computes the head
        # at every position, a third of a prefill's work on the tiny checkpoint).
        hd = model.talker.model(batch.input_embeds, cache=cache, attention_mask=mask)[:, -1:, :]
        lg = model.talker.codec_head(hd)
        if self.pad_embed is None:
            self.pad_embed = batch.tts_pad_embed
        n = len(group)
        new = Rows(
            cache=cache,
            kv_lens=list(batch.prefill_lens),
            embeds=mx.zeros((n, 1, hd.shape[-1]), dtype=hd.dtype),  # replaced by this step's codes
            trailing=batch.trailing_text_hidden,
            trailing_idx=mx.zeros((n, 1), dtype=mx.int32),
            history=mx.full((n, HISTORY), self.config.vocab_size, dtype=mx.int32),  # vocab = none yet
        )
        self.state = join(self.state, new, self.pad_embed)
        for r in group:
            r.codec = self.codec.row()
        return lg[:, -1, :], hd

    def _advance(self, logits: mx.array, hidden: mx.array) -> None:
        """Sample this frame's 16 codes for every row, prepare the next inputs, retire rows."""
        s, rows, model, config = self.state, self.rows, self.model, self.config
        assert s is not None  # _prefill joined the rows of this step, if none were running
        n, vocab = len(rows), config.vocab_size
        seeds = mx.array([r.seed & UINT32 for r in rows], dtype=mx.uint32)
        steps = mx.array([r.frames for r in rows], dtype=mx.uint32)
        live = mx.array([not r.done for r in rows])
        no_recent = mx.zeros((n, vocab + 1), dtype=mx.bool_)
        recent = mx.put_along_axis(no_recent, s.history, mx.ones(s.history.shape, dtype=mx.bool_), axis=-1)
        first = sample_rows(logits, seeds, steps, 0, self.talker_opts, suppress=self.suppress, recent=recent[:, :vocab])
        first = mx.where(live, first.astype(mx.int32), mx.full((n,), self.eos, dtype=mx.int32))
        hit_eos = first == self.eos
        if self.clock:
            self.clock.mark("sampling", first)
        # Code predictor: the other 15 codebooks of this frame, one token per row each, in one
        # compiled call (rows padded up to a compiled shape: code_predictor_step.py).
        size = self.size if n <= self.size else self.size + RIDER_SEATS  # riders aboard: one compiled shape more
        rest = self.predict(hidden, first, seeds, steps, size)
        self.padding.append(self.predict.bucket(n, size) - n)
        if self.clock:
            self.clock.mark("code_predictor", rest)
        all_codes = mx.concatenate([first[:, None], rest], axis=1)  # (rows, 16)
        tokens = [all_codes[:, g : g + 1] for g in range(config.num_code_groups)]
        s.embeds = model._next_batch_input_embeds(
            s.trailing, self.pad_embed, s.trailing_idx, tokens, pad_when_index_clamped=True
        )
        going = live & ~hit_eos
        s.trailing_idx = s.trailing_idx + going.astype(mx.int32)[:, None]
        shifted = mx.concatenate([s.history[:, 1:], first[:, None]], axis=1)
        s.history = mx.where(going[:, None], shifted, s.history)
        mx.eval(all_codes, s.embeds, hit_eos, s.history, s.trailing_idx)
        if self.clock:
            self.clock.mark("next_input")
            self.clock.frames += sum(not r.done for r in rows)
        eos_now = hit_eos.tolist()  # the step's one host sync
        codes = np.array(all_codes)  # to the host: the codec thread builds its own arrays
        for b, row in enumerate(rows):
            if row.done:
                continue
            if eos_now[b]:
                row.done, row.eos = True, True
            else:
                row.fresh.append(codes[b])
                if row.codes is not None:
                    row.codes.append(codes[b])
                row.frames += 1
                row.done = row.frames >= row.budget
            self._emit(row)
        if self.clock:
            self.clock.mark("codec")  # decoded inline, as each row's chunk came due
        self._retire()

    def _emit(self, row: Row) -> None:
        """Send the row's undecoded frames to the codec when a chunk is due (or the row ended)."""
        due = FIRST_CHUNK if row.chunks == 0 else LATER_CHUNK
        if not (row.done or len(row.fresh) >= due):
            return
        if row.fresh:
            assert row.codec is not None  # given at the row's prefill, before its first frame
            future = self.codec.submit(row.codec, row.fresh)
        else:
            future = Future()
            future.set_result(np.zeros(0, np.float32))
        self.outbox.append((row, future, len(row.fresh), row.done))
        row.fresh = []
        row.chunks += 1

    def _retire(self) -> None:
        """Continuous: finished rows leave now. Static: the batch ends with its last row."""
        going = [i for i, r in enumerate(self.rows) if not r.done]
        if len(going) == len(self.rows) or (going and not self.continuous):
            return
        if going:
            assert self.state is not None  # the batch has rows
            self.state = keep(self.state, going)
            self.rows = [self.rows[i] for i in going]
        else:
            self.state, self.rows = None, []
            mx.clear_cache()

    def ready(self, wait: bool = False) -> Iterator[Chunk]:
        """Audio chunks whose decode is done, in the order they were sent (all of them: `wait`)."""
        while self.outbox and (wait or self.outbox[0][1].done()):
            row, future, frames, final = self.outbox.popleft()
            runaway = final and not row.eos
            yield Chunk(row.index, future.result(), frames, final, runaway)

    def close(self) -> None:
        self.codec.close()
