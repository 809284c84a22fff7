"""Synthesis: sentences in, streamed audio chunks out, with an injected (cached) voice embedding.

Sequential path: mlx-audio's own ``Model.generate`` (x-vector cloning, stream=True) per
sentence, seeded per sentence, with a per-sentence frame budget. The voice embedding is injected
by shadowing ``extract_speaker_embedding`` on the model instance for the duration of a call, so
the speaker encoder never runs here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import mlx.core as mx
import numpy as np

from .models import LoadedModel

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


@contextlib.contextmanager
def injected_voice(model, embedding: mx.array):
    """Make the model's x-vector path use `embedding` instead of running the speaker encoder."""

    def cached(audio, sr: int = 24000) -> mx.array:  # noqa: ARG001 - signature of the original
        return embedding

    model.extract_speaker_embedding = cached
    try:
        yield
    finally:
        del model.extract_speaker_embedding


def _placeholder() -> mx.array:
    global _PLACEHOLDER_REF
    if _PLACEHOLDER_REF is None:
        _PLACEHOLDER_REF = mx.zeros((2400,), dtype=mx.float32)
    return _PLACEHOLDER_REF


class Engine:
    def __init__(self, loaded: LoadedModel):
        self.loaded = loaded

    def synthesize(self, sentences: Sequence[Sentence], embedding: mx.array) -> Iterator[Chunk]:
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
