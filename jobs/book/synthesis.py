"""What a job asks of a synthesis engine, without importing one: the sentence it hands over, the
audio chunks it gets back, and the ``Engine`` protocol that the MLX engine
(narrate.worker.engine.mlx_engine) and the fake engine used by fault tests
(narrate.worker.testkit.fake_engine) both implement. Nothing here imports mlx."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # numpy is loaded by what makes audio, not by every command that imports this
    import numpy as np
    from narrate.jobs.book.voice import VoiceRef

OnBatch = Callable[[list[int]], None]
# Told each chunk of a take the engine drops: a runaway's audio, synthesized again with a new seed.
# Its frames were computed all the same (the worker's batch log line counts them).
OnDropped = Callable[["Chunk"], None]


@dataclass(frozen=True)
class Sentence:
    index: int  # position in the document, reading order
    text: str
    seed: int  # sampling seed (see jobs.book.plan.sentence_seed)
    budget: int  # most codec frames this sentence may take
    language: str = "auto"  # what Qwen3-TTS calls the language (jobs.documents.languages.tts_name): english, german...
    voice: str = "narrator"  # the cast's label of the voice that speaks it (jobs.documents.voicing)


@dataclass(frozen=True)
class Chunk:
    index: int  # the sentence this audio belongs to
    pcm: np.ndarray  # float32 samples at 24 kHz
    frames: int  # codec frames in this chunk
    final: bool  # last chunk of the sentence
    runaway: bool = False  # final chunk only: the sentence used its whole budget without EOS
    takes: int = 1  # final chunk only: syntheses of the sentence (2: a runaway synthesized again)


@dataclass(frozen=True)
class VoiceEmbedding:
    """A voice ready for the engine: `value` is engine-specific (the MLX engine's: a RowVoice, a
    clone's cached embedding, a preset speaker with its instruction or a design), whether it came
    from the cache and how often the speaker encoder ran to get it (a preset or a design: True, 0:
    nothing to compute), and a warning for the job (an instruction this model ignores)."""

    value: Any
    cache_hit: bool
    encoder_runs: int
    warning: str | None = None  # e.g. an instruction this model ignores (0.6B): said in the job's meta and log


class Engine(Protocol):
    """One loaded model, ready to synthesize sentences in one voice. What it says of itself is read
    only (an engine may answer from its loaded model: properties)."""

    @property
    def model_key(self) -> str:
        """Identity of the weights (content hash): keys checkpoints and embeddings."""
        ...

    @property
    def source(self) -> str:
        """What was loaded: a hub id or a local path."""
        ...

    @property
    def quant(self) -> str:
        """bf16 | 4bit | 6bit | 8bit | float32."""
        ...

    @property
    def rides(self) -> bool:
        """Its synthesis takes riders (other jobs' sentences) into its batches."""
        ...

    def voice(self, r: Any, ref: VoiceRef) -> VoiceEmbedding:
        """The voice ready to inject (`r`: the Redis client that holds voice samples): a clone's
        embedding, a preset speaker, a design. Raises BadInput when this model cannot speak it (a
        sample on a CustomVoice model, a speaker it does not have: the message lists its speakers)."""
        ...

    def synthesize(
        self,
        sentences: Sequence[Sentence],
        voice: VoiceEmbedding | Mapping[str, VoiceEmbedding],
        on_batch: OnBatch | None = None,
        riders: RiderSource | None = None,
        on_dropped: OnDropped | None = None,
    ) -> Iterator[Chunk]:
        """Audio for every sentence, in `voice`, or with a cast (a mapping) in the voice of each
        sentence's label (rows of different voices share a batch), streamed in chunks (possibly out
        of reading order); each sentence ends with a ``final`` chunk. ``on_batch`` is told the indices of each batch
        before its first sentence starts (with continuous batching, rows of the batch before may
        still be running); it may raise to stop: no sentence starts after that, the sentences
        already started finish (their chunks still come), then the exception comes. ``riders``
        (engines whose ``rides`` is True) is asked between steps for other jobs' sentences to
        take along (see ``Rider``). ``on_dropped`` is told each chunk of a runaway take that is
        dropped to be synthesized again (never among the chunks that come out)."""
        ...


class Rider(Protocol):
    """Another job's sentences riding along a running synthesis: a speech request's line (a clip
    job) joins the batch of a book at the next free slot, ahead of the book's own next sentences,
    instead of waiting hours behind it. Its audio goes to the rider, never into the book's chunks."""

    sentences: list[Sentence]  # its own, numbered from 0

    def voice(self, engine: Engine) -> VoiceEmbedding:
        """Its voice ready for `engine` (raises BadInput when the engine cannot speak it)."""
        ...

    def chunk(self, chunk: Chunk) -> None:
        """Each audio chunk of its sentences (``index``: its own sentence's), as they come."""
        ...

    def give_back(self, why: str) -> None:
        """It cannot ride (on) with this synthesis: its job goes back to its queue, whole."""
        ...


RiderSource = Callable[[], "list[Rider]"]  # the riders that came since it was last asked
