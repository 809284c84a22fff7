"""The MLX synthesis engine: sentences in, streamed audio chunks out. It implements
narrate.jobs.task.model_protocols.Engine for the three kinds of Qwen3-TTS model (row_voices.py): a Base
model clones a sample from its cached x-vector (the speaker encoder never runs here), a
CustomVoice model speaks a preset speaker, a VoiceDesign model a described voice.

Its one path, ``batched`` (through ``synthesize``, the job's call): narrate's batching
(decode_loop.py), sentences grouped by length within a reading-order window and admitted into a
continuous batch (admission.py), each with its own seed and frame budget; every row has its own
voice (mlx_compat.VoiceRows), so rows of different voices share a batch; a runaway is synthesized
again with a new seed. ``continuous=False`` runs each group as a static batch instead (the
benchmark's reference).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import mlx.core as mx
from narrate.jobs.book.synthesis import Chunk, OnBatch, OnDropped, Sentence, VoiceEmbedding
from narrate.jobs.book.voice import VoiceRef
from narrate.jobs.task.model_protocols import Rider, RiderSource
from narrate.worker import blas
from narrate.worker.engine import admission, row_voices
from narrate.worker.engine.code_predictor_step import code_predictor_step
from narrate.worker.engine.decode_loop import RIDER_SEATS, DecodeLoop, StageClock
from narrate.worker.engine.mlx_compat import check_internals
from narrate.worker.engine.models import LoadedModel
from narrate.worker.engine.row_voices import RowVoice
from narrate.worker.engine.sampling import options

# Sentences are reordered by length only within a window of this many batches, so the writer
# never holds more than a window's audio while it waits for the next sentence in reading order.
WINDOW_BATCHES = 4

# auto_batch_size: rows per batch by device (16 measured best on an H200; 32 compiles for
# minutes), capped so the worst-case KV caches of a batch fit in a quarter of the device memory.
GPU_BATCH = 16
CPU_BATCH = 8
KV_MEMORY_SHARE = 4  # the KV caches may take 1/KV_MEMORY_SHARE of the device memory
KV_BYTES_PER_VALUE = 2  # bf16 keys and values (float32's: 4, the talker's dtype says)
# KV positions allowed per row beyond its frame budget: the prefill (chat framing, the speaker
# embedding and the text of a sentence of at most 400 characters, about a hundred tokens) and
# mlx-audio's KV cache growing in steps of 256 positions, roughly.
KV_PREFILL_ALLOWANCE = 256
# A runaway's retry seed: the seed moved by an odd 32-bit constant (2^32 / golden ratio) per
# attempt, kept to 31 bits like every sentence seed.
RETRY_SEED_STEP = 0x9E3779B9
SEED_MASK = 0x7FFFFFFF

# A voice for `batched`: one for every sentence (a RowVoice, or a bare x-vector: a clone), or each
# sentence's own, by sentence index (rows of different voices share the batch).
Voices = RowVoice | mx.array | Mapping[int, RowVoice]


def is_gpu() -> bool:
    """MLX runs on a GPU here (Metal or CUDA), where a new compiled shape costs a long JIT."""
    return mx.default_device().type == mx.gpu


def auto_batch_size(max_frames: int, talker_config: Any, value_bytes: int = KV_BYTES_PER_VALUE) -> int:
    """Rows per batch: GPU_BATCH on a GPU, CPU_BATCH on a CPU, fewer if the worst-case KV
    caches (`value_bytes` a key or value: the talker's dtype) would not fit in 1/KV_MEMORY_SHARE
    of the device memory."""
    wanted = GPU_BATCH if is_gpu() else CPU_BATCH
    try:
        memory = int(mx.device_info().get("memory_size", 0))
    except Exception:  # noqa: BLE001 - older mlx: no device_info
        memory = 0
    if memory:
        c = talker_config
        per_position = c.num_hidden_layers * 2 * c.num_key_value_heads * c.head_dim * value_bytes  # K and V
        per_row = per_position * (max_frames + KV_PREFILL_ALLOWANCE)
        wanted = max(1, min(wanted, memory // KV_MEMORY_SHARE // max(per_row, 1)))
    return wanted


def batches(sentences: Sequence[Sentence], size: int) -> list[list[Sentence]]:
    """Batches of similar length and one language (the model is told it once a batch),
    reordered only within reading-order windows."""
    out: list[list[Sentence]] = []
    window = size * WINDOW_BATCHES
    for start in range(0, len(sentences), window):
        group = sorted(sentences[start : start + window], key=lambda s: (s.language, len(s.text), s.index))
        for _, same in itertools.groupby(group, key=lambda s: s.language):
            one = list(same)
            out.extend(one[i : i + size] for i in range(0, len(one), size))
    return out


def retry_seed(seed: int, attempt: int) -> int:
    return (seed + RETRY_SEED_STEP * attempt) & SEED_MASK


def voice_of_each(sentences: Sequence[Sentence], voice: Voices) -> dict[int, RowVoice]:
    """Each sentence's voice, by sentence index."""
    if isinstance(voice, Mapping):
        missing = [s.index for s in sentences if s.index not in voice]
        if missing:
            raise ValueError(f"no voice for sentences {missing[:10]}")
        return {s.index: voice[s.index] for s in sentences}
    one = row_voices.as_row_voice(voice)
    return {s.index: one for s in sentences}


class MlxEngine:
    """A loaded Qwen3-TTS model (Base, CustomVoice or VoiceDesign) as a narrate.jobs.task.model_protocols.Engine."""

    def __init__(
        self,
        loaded: LoadedModel,
        batch_size: int | None = None,
        runaway_retries: int = 1,
        continuous: bool = True,
        threaded_codec: bool = True,
        clock: StageClock | None = None,
    ):
        self.loaded = loaded
        blas.threads_for(int(loaded.model.config.talker_config.hidden_size))  # every core for a real model's products
        self.clock = clock  # narrate bench's stage profile: every stage of the decode loop evaluated and timed
        self.batch_size = batch_size
        self.runaway_retries = runaway_retries
        self.continuous = continuous  # False: static batches (the benchmark's and the tests' reference)
        self.threaded_codec = threaded_codec
        self.last_loop: DecodeLoop | None = None  # the decode loop of the latest synthesis (its step counts)

    rides = True  # a book's batches take other jobs' sentences along (admission.py: riders)

    @property
    def model_key(self) -> str:
        return self.loaded.key

    @property
    def source(self) -> str:
        return self.loaded.resolved.source

    @property
    def quant(self) -> str:
        return self.loaded.resolved.quant

    def voice(self, r: Any, ref: VoiceRef) -> VoiceEmbedding:
        """The voice ready for this model (its value a row_voices.RowVoice): a clone's embedding in the
        talker's dtype (from the Redis cache if there), a preset speaker, a design. BadInput if the
        model cannot speak it (row_voices.refusal); an instruction it ignores comes back as a warning."""
        from narrate.worker.engine.voice_cache import voice_embedding

        return row_voices.voice_for(self.loaded, ref, lambda sha: voice_embedding(r, self.loaded, sha))

    def warm_up(self, progress: Callable[[], None] | None = None) -> None:
        """Compile the decode step for every row count a batch of this engine can have (the
        largest automatic size when none is set), before the first job rather than during it;
        `progress` is called after each compiled shape."""
        size = self.batch_size or (GPU_BATCH if is_gpu() else CPU_BATCH)
        model = self.loaded.model
        step = code_predictor_step(model, options(model.generate_config)[1])
        for rows in (size, size + RIDER_SEATS):  # and the shape of a full batch with riders aboard
            step.warm_up(rows, self.loaded.talker_dtype, progress)

    def synthesize(
        self,
        sentences: Sequence[Sentence],
        voice: VoiceEmbedding | Mapping[str, VoiceEmbedding],
        on_batch: OnBatch | None = None,
        riders: RiderSource | None = None,
        on_dropped: OnDropped | None = None,
    ) -> Iterator[Chunk]:
        """The job path: batched synthesis, every sentence in `voice`, or with a cast (a mapping)
        each in the voice of its label (``Sentence.voice``), rows of different voices in one batch
        (chunks may come out of reading order). `on_batch` is told the sentence indices of each
        batch before it starts; `riders` is asked between steps for other jobs' sentences to take
        along (admission.py); `on_dropped` is told the chunks of each runaway take dropped to be
        synthesized again."""
        size = self.batch_size
        if size is None:
            config, value_bytes = self.loaded.model.config.talker_config, self.loaded.talker_dtype.size
            size = auto_batch_size(max(s.budget for s in sentences), config, value_bytes)
        if not isinstance(voice, Mapping):
            return self.batched(sentences, voice.value, size, on_batch, riders, on_dropped)
        missing = sorted({s.voice for s in sentences} - set(voice))
        if missing:
            raise ValueError(f"the cast has no voice {', '.join(map(repr, missing))}")
        each = {s.index: voice[s.voice].value for s in sentences}
        return self.batched(sentences, each, size, on_batch, riders, on_dropped)

    def batched(
        self,
        sentences: Sequence[Sentence],
        voice: Voices,
        size: int,
        on_batch: OnBatch | None = None,
        riders: RiderSource | None = None,
        on_dropped: OnDropped | None = None,
    ) -> Iterator[Chunk]:
        """Groups of similar length through one decode loop, at most `size` rows at a time
        (continuous: a finished row's slot goes to the next sentence at once; static: each group
        runs to its last row), each row in its sentence's voice; a runaway row (budget used, no
        EOS) is synthesized again with a new seed, up to `runaway_retries` times, after its group.
        BadInput if the model cannot speak one of the row_voices."""
        if not self.loaded.internals_checked:  # once per loaded model, not every synthesis
            check_internals(self.loaded.model)
            self.loaded.internals_checked = True
        each = voice_of_each(sentences, voice)
        for v in {id(v): v for v in each.values()}.values():
            row_voices.check(self.loaded, v)
        loop = DecodeLoop(self.loaded.model, size, self.continuous, self.threaded_codec, self.clock)
        self.last_loop = loop
        groups = batches(sentences, size)
        boarding = None if riders is None else functools.partial(self.board, riders)
        yield from admission.run(
            loop,
            groups,
            size,
            self.runaway_retries,
            retry_seed,
            lambda s: each[s.index],
            on_batch,
            boarding,
            on_dropped,
        )

    def board(self, riders: RiderSource) -> list[tuple[Rider, RowVoice]]:
        """The riders come since last asked, each with its voice ready; one this model cannot speak
        (or whose voice cannot be made) is given back: on its own it fails and says why."""
        aboard = []
        for rider in riders():
            try:
                voice = row_voices.as_row_voice(rider.voice(self).value)
                row_voices.check(self.loaded, voice)
            except Exception as e:  # noqa: BLE001 - the rider's own failure, never the book's
                rider.give_back(f"this model cannot take it along ({e})")
                continue
            aboard.append((rider, voice))
        return aboard
