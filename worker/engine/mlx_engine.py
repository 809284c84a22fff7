"""The MLX synthesis engine: sentences in, streamed audio chunks out, in one injected (cached)
voice. It implements narrate.jobs.book.synthesis.Engine.

Two paths, both with the voice embedding injected (mlx_compat.injected_voice: the speaker
encoder never runs here) and a per-sentence frame budget:

- ``batched`` (the job path): narrate's x-vector batching (decode_loop.py), sentences grouped by
  length within a reading-order window and admitted into a continuous batch (admission.py), each
  row with its own seed and budget; a runaway is synthesized again with a new seed;
- ``sequential``: mlx-audio's own ``Model.generate`` (x-vector cloning, stream=True), one
  sentence at a time, seeded per sentence (used by the benchmark and the dtype tests).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import mlx.core as mx
import numpy as np
from narrate.jobs.book.synthesis import Chunk, OnBatch, Sentence, VoiceEmbedding
from narrate.worker.engine import admission
from narrate.worker.engine.code_predictor_step import code_predictor_step
from narrate.worker.engine.decode_loop import DecodeLoop
from narrate.worker.engine.mlx_compat import check_internals, injected_voice, placeholder_reference
from narrate.worker.engine.models import LoadedModel
from narrate.worker.engine.sampling import options

# Sentences are reordered by length only within a window of this many batches, so the writer
# never holds more than a window's audio while it waits for the next sentence in reading order.
WINDOW_BATCHES = 4
STREAM_INTERVAL_S = 0.32  # sequential path: 4 codec frames (12.5 a second) per streamed chunk

# auto_batch_size: rows per batch by device (16 measured best on an H200; 32 compiles for
# minutes), capped so the worst-case KV caches of a batch fit in a quarter of the device memory.
GPU_BATCH = 16
CPU_BATCH = 8
KV_MEMORY_SHARE = 4  # the KV caches may take 1/KV_MEMORY_SHARE of the device memory
KV_BYTES_PER_VALUE = 2  # bf16 keys and values
# KV positions allowed per row beyond its frame budget: the prefill (chat framing, the speaker
# embedding and the text of a sentence of at most 400 characters, about a hundred tokens) and
# mlx-audio's KV cache growing in steps of 256 positions, roughly.
KV_PREFILL_ALLOWANCE = 256
# A runaway's retry seed: the seed moved by an odd 32-bit constant (2^32 / golden ratio) per
# attempt, kept to 31 bits like every sentence seed.
RETRY_SEED_STEP = 0x9E3779B9
SEED_MASK = 0x7FFFFFFF


def is_gpu() -> bool:
    """MLX runs on a GPU here (Metal or CUDA), where a new compiled shape costs a long JIT."""
    return mx.default_device().type == mx.gpu


def auto_batch_size(max_frames: int, talker_config: Any) -> int:
    """Rows per batch: GPU_BATCH on a GPU, CPU_BATCH on a CPU, fewer if the worst-case KV
    caches would not fit in 1/KV_MEMORY_SHARE of the device memory."""
    wanted = GPU_BATCH if is_gpu() else CPU_BATCH
    try:
        memory = int(mx.device_info().get("memory_size", 0))
    except Exception:  # noqa: BLE001 - older mlx: no device_info
        memory = 0
    if memory:
        c = talker_config
        per_position = c.num_hidden_layers * 2 * c.num_key_value_heads * c.head_dim * KV_BYTES_PER_VALUE  # K and V
        per_row = per_position * (max_frames + KV_PREFILL_ALLOWANCE)
        wanted = max(1, min(wanted, memory // KV_MEMORY_SHARE // max(per_row, 1)))
    return wanted


def batches(sentences: Sequence[Sentence], size: int) -> list[list[Sentence]]:
    """Batches of similar length and one language (the model is told it once a batch),
    reordered only within reading-order windows."""
    out = []
    window = size * WINDOW_BATCHES
    for start in range(0, len(sentences), window):
        group = sorted(sentences[start : start + window], key=lambda s: (s.language, len(s.text), s.index))
        for _, same in itertools.groupby(group, key=lambda s: s.language):
            one = list(same)
            out.extend(one[i : i + size] for i in range(0, len(one), size))
    return out


def retry_seed(seed: int, attempt: int) -> int:
    return (seed + RETRY_SEED_STEP * attempt) & SEED_MASK


class MlxEngine:
    """A loaded Qwen3-TTS Base model as a narrate.jobs.book.synthesis.Engine."""

    def __init__(
        self,
        loaded: LoadedModel,
        batch_size: int | None = None,
        runaway_retries: int = 1,
        continuous: bool = True,
        threaded_codec: bool = True,
    ):
        self.loaded = loaded
        self.batch_size = batch_size
        self.runaway_retries = runaway_retries
        self.continuous = continuous  # False: static batches (the benchmark's and the tests' reference)
        self.threaded_codec = threaded_codec
        self.last_loop: DecodeLoop | None = None  # the decode loop of the latest synthesis (its step counts)

    @property
    def model_key(self) -> str:
        return self.loaded.key

    @property
    def source(self) -> str:
        return self.loaded.resolved.source

    @property
    def quant(self) -> str:
        return self.loaded.resolved.quant

    def voice(self, r: Any, voice_sha: str) -> VoiceEmbedding:
        """The stored voice's embedding in the talker's dtype, from the Redis cache if there."""
        from narrate.worker.engine.voice_cache import voice_embedding

        embedding, hit = voice_embedding(r, self.loaded, voice_sha)
        return VoiceEmbedding(embedding, hit, 0 if hit else 1)  # a miss runs the speaker encoder once

    def warm_up(self, progress: Callable[[], None] | None = None) -> None:
        """Compile the decode step for every row count a batch of this engine can have (the
        largest automatic size when none is set), before the first job rather than during it;
        `progress` is called after each compiled shape."""
        size = self.batch_size or (GPU_BATCH if is_gpu() else CPU_BATCH)
        model = self.loaded.model
        step = code_predictor_step(model, options(model.generate_config)[1])
        step.warm_up(size, self.loaded.talker_dtype, progress)

    def synthesize(
        self, sentences: Sequence[Sentence], voice: VoiceEmbedding, on_batch: OnBatch | None = None
    ) -> Iterator[Chunk]:
        """The job path: batched x-vector synthesis (chunks may come out of reading order).
        `on_batch` is told the sentence indices of each batch before it starts."""
        size = self.batch_size
        if size is None:
            size = auto_batch_size(max(s.budget for s in sentences), self.loaded.model.config.talker_config)
        return self.batched(sentences, voice.value, size, on_batch)

    def batched(
        self, sentences: Sequence[Sentence], embedding: mx.array, size: int, on_batch: OnBatch | None = None
    ) -> Iterator[Chunk]:
        """Groups of similar length through one decode loop, at most `size` rows at a time
        (continuous: a finished row's slot goes to the next sentence at once; static: each group
        runs to its last row); a runaway row (budget used, no EOS) is synthesized again with a
        new seed, up to `runaway_retries` times, after its group."""
        check_internals(self.loaded.model)
        model = self.loaded.model
        with injected_voice(model, embedding):
            loop = DecodeLoop(model, placeholder_reference(), size, self.continuous, self.threaded_codec)
            self.last_loop = loop
            yield from admission.run(loop, batches(sentences, size), size, self.runaway_retries, retry_seed, on_batch)

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
                    lang_code=s.language,
                    ref_audio=placeholder_reference(),
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
