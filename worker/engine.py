"""Synthesis: sentences in, streamed audio chunks out, with an injected (cached) voice embedding.

Two paths, both with the voice embedding injected by shadowing ``extract_speaker_embedding`` on
the model instance (so the speaker encoder never runs here) and a per-sentence frame budget:

- ``sequential``: mlx-audio's own ``Model.generate`` (x-vector cloning, stream=True), one
  sentence at a time, seeded per sentence;
- ``batched`` (the default for jobs): narrate's x-vector batching (see batching.py), sentences
  grouped by length within a reading-order window, each row with its own seed and budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import mlx.core as mx
import numpy as np

from .batching import Row, check_internals, generate_batch, shadow
from .models import LoadedModel

# Sentences are reordered by length only within a window of this many batches, so the writer
# never holds more than a window's audio while it waits for the next sentence in reading order.
WINDOW_BATCHES = 4

OnBatch = Callable[[list[int]], None]
STREAM_INTERVAL_S = 0.32  # 4 codec frames per streamed chunk
_PLACEHOLDER_REF = None  # set lazily: an mx.array mlx-audio passes through untouched


@dataclass(frozen=True)
class Sentence:
    index: int
    text: str
    seed: int
    budget: int  # most codec frames this sentence may take


@dataclass(frozen=True)
class Chunk:
    index: int  # the sentence this audio belongs to
    pcm: np.ndarray  # float32 samples at 24 kHz
    frames: int  # codec frames in this chunk
    final: bool  # last chunk of the sentence
    runaway: bool = False  # final chunk only: the sentence used its whole budget without EOS
    attempts: int = 1  # final chunk only: 2 when a runaway was retried with a new seed


def injected_voice(model, embedding: mx.array):
    """Make the model's x-vector path use `embedding` instead of running the speaker encoder."""

    def cached(audio, sr: int = 24000) -> mx.array:  # noqa: ARG001 - signature of the original
        return embedding

    return shadow(model, "extract_speaker_embedding", cached)


def _placeholder() -> mx.array:
    global _PLACEHOLDER_REF
    if _PLACEHOLDER_REF is None:
        _PLACEHOLDER_REF = mx.zeros((2400,), dtype=mx.float32)
    return _PLACEHOLDER_REF


def auto_batch_size(max_frames: int, talker_config) -> int:
    """Rows per batch: 16 on a GPU (measured best on an H200; 32 compiles for minutes), 8 on a
    CPU, fewer if the worst-case KV caches would not fit in a quarter of the device memory."""
    wanted = 16 if mx.default_device().type == mx.gpu else 8
    try:
        memory = int(mx.device_info().get("memory_size", 0))
    except Exception:  # noqa: BLE001 - older mlx: no device_info
        memory = 0
    if memory:
        per_token = talker_config.num_hidden_layers * 2 * talker_config.num_key_value_heads * talker_config.head_dim * 2
        per_row = per_token * (max_frames + 256)
        wanted = max(1, min(wanted, memory // 4 // max(per_row, 1)))
    return wanted


def batches(sentences: Sequence[Sentence], size: int) -> list[list[Sentence]]:
    """Batches of similar length, reordered only within reading-order windows."""
    out = []
    window = size * WINDOW_BATCHES
    for start in range(0, len(sentences), window):
        group = sorted(sentences[start : start + window], key=lambda s: (len(s.text), s.index))
        out.extend(group[i : i + size] for i in range(0, len(group), size))
    return out


def retry_seed(seed: int, attempt: int) -> int:
    return (seed + 0x9E3779B9 * attempt) & 0x7FFFFFFF


class Engine:
    def __init__(self, loaded: LoadedModel, batch_size: int | None = None, runaway_retries: int = 1):
        self.loaded = loaded
        self.batch_size = batch_size
        self.runaway_retries = runaway_retries

    @property
    def model_key(self) -> str:
        return self.loaded.key

    @property
    def source(self) -> str:
        return self.loaded.resolved.source

    @property
    def quant(self) -> str:
        return self.loaded.resolved.quant

    def voice(self, r, voice_sha: str) -> tuple[mx.array, bool, int]:
        """(embedding, cache hit?, speaker-encoder runs) for a stored voice."""
        from .models import SpeakerEncoderRuns
        from .voice_cache import voice_embedding

        before = SpeakerEncoderRuns.count
        embedding, hit = voice_embedding(r, self.loaded, voice_sha)
        return embedding, hit, SpeakerEncoderRuns.count - before

    def synthesize(
        self, sentences: Sequence[Sentence], embedding: mx.array, on_batch: OnBatch | None = None
    ) -> Iterator[Chunk]:
        """The job path: batched x-vector synthesis (chunks may come out of reading order).
        `on_batch` is told the sentence indices of each batch before it starts."""
        size = self.batch_size
        if size is None:
            size = auto_batch_size(max(s.budget for s in sentences), self.loaded.model.config.talker_config)
        return self.batched(sentences, embedding, size, on_batch)

    def batched(
        self, sentences: Sequence[Sentence], embedding: mx.array, size: int, on_batch: OnBatch | None = None
    ) -> Iterator[Chunk]:
        """Batches of similar length; a runaway row (budget used, no EOS) is synthesized again
        with a new seed, up to `runaway_retries` times, right after its batch."""
        check_internals()
        with injected_voice(self.loaded.model, embedding):
            for group in batches(sentences, size):
                yield from self._group(group, attempt=0, on_batch=on_batch)

    def _group(self, group: Sequence[Sentence], attempt: int, on_batch: OnBatch | None) -> Iterator[Chunk]:
        if on_batch is not None:
            on_batch([s.index for s in group])
        model = self.loaded.model
        rows = [Row(s.index, retry_seed(s.seed, attempt), s.budget) for s in group]
        by_index = {s.index: s for s in group}
        retry: list[Sentence] = []
        held: dict[int, list[Chunk]] = {}
        can_retry = attempt < self.runaway_retries
        for c in generate_batch(model, [s.text for s in group], rows, _placeholder()):
            chunk = Chunk(c.index, c.pcm, c.frames, c.final, c.runaway, attempt + 1)
            if not can_retry:
                yield chunk
                continue
            held.setdefault(c.index, []).append(chunk)  # hold a sentence until it is known good
            if c.final:
                parts = held.pop(c.index)
                if c.runaway:
                    retry.append(by_index[c.index])
                else:
                    yield from parts
        if retry:
            yield from self._group(retry, attempt + 1, on_batch)

    def sequential(self, sentences: Sequence[Sentence], embedding: mx.array) -> Iterator[Chunk]:
        """Each sentence alone through mlx-audio's generate, in order, streamed."""
        model = self.loaded.model
        with injected_voice(model, embedding):
            for s in sentences:
                mx.random.seed(s.seed)
                frames = 0
                pending: Chunk | None = None
                for r in model.generate(
                    text=s.text,
                    ref_audio=_placeholder(),
                    max_tokens=s.budget,
                    stream=True,
                    streaming_interval=STREAM_INTERVAL_S,
                    split_pattern="",
                    verbose=False,
                ):
                    if pending is not None:
                        yield pending
                    frames += int(r.token_count)
                    pending = Chunk(s.index, np.array(r.audio, dtype=np.float32), int(r.token_count), False)
                runaway = frames >= s.budget
                if pending is None:  # EOS on the first step: an empty sentence
                    yield Chunk(s.index, np.zeros(0, np.float32), 0, True, runaway)
                else:
                    yield Chunk(s.index, pending.pcm, pending.frames, True, runaway)
