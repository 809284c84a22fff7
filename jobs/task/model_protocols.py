"""The models a job drives, as protocols, without importing one (nothing here imports mlx): the synthesis
``Engine`` (narrate.worker.engine.mlx_engine; the fault tests' narrate.worker.testkit.fake_engine) with the
``Rider`` that joins its batches, the proof pass's speech ``Recognizer`` (narrate.worker.engine.recognizer;
worker.testkit.fake_recognizer) and the word timings' forced ``Aligner`` (narrate.worker.engine.aligner;
worker.testkit.fake_aligner). Lists that a model takes beside its takes are keyword-only: the recognizer's
and the aligner's took the same three lists in two orders, so a call in the other's order ran with them
swapped and no error."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    from narrate.jobs.book.synthesis import Chunk, OnBatch, OnDropped, Sentence, VoiceEmbedding
    from narrate.jobs.book.voice import VoiceRef
    from narrate.jobs.readalong.timing import Word


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


class Recognizer(Protocol):
    """A loaded speech recognizer."""

    source: str  # what was loaded: a hub id or a local path

    def transcribe(self, takes: Sequence[np.ndarray], *, languages: Sequence[str], texts: Sequence[str]) -> list[str]:
        """What is heard in each take (float samples at 24 kHz), in its language (what Qwen3-TTS calls it:
        "english", ..., or "auto"); `texts` are what the takes should say, as spoken: a transcript stops at the
        limit they give (``limit_of``, a recognizer that runs on stops there). Takes are transcribed together where
        the model can batch them."""
        ...


class Aligner(Protocol):
    """A loaded forced aligner."""

    source: str  # what was loaded: a hub id or a local path

    def align(self, takes: Sequence[np.ndarray], *, texts: Sequence[str], languages: Sequence[str]) -> list[list[Word]]:
        """Each take's words (float samples at 24 kHz; `texts` what was spoken, in its language as Qwen3-TTS calls
        it: "english", ..., or "auto") as (word, start, end), seconds from the start of the take, in the order
        spoken; an empty list where it found none (a take it could not align)."""
        ...
