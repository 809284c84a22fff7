"""What a job hands a synthesis engine and gets back, without importing one: the sentence, the audio
chunks, a voice made ready. The ``Engine`` protocol itself is in narrate.jobs.task.model_protocols. Nothing
here imports mlx."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is loaded by what makes audio, not by every command that imports this
    import numpy as np

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
