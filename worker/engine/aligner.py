"""Word timings (`--word-timings`): mlx-audio's Qwen3-ForcedAligner (``mlx_audio.stt.models.qwen3_forced_aligner``),
loaded by mlx-audio's own STT loader from a hub id or a local directory, finding when each word of a sentence is
spoken in its take. It implements narrate.jobs.task.model_protocols.Aligner.

The aligner is a Qwen3-ASR model whose head classifies, at each ``<timestamp>`` token put between the words of the
known text, the time (80 ms classes) the word starts or ends: one forward pass a take, no decoding. Its
``generate(audio, text=, language=)`` splits the text into words its own way (punctuation dropped; Chinese
characters one by one; Japanese and Korean with nagisa and soynlp, which narrate does not install: a take it cannot
split has no words) and returns a ``ForcedAlignResult`` of ``ForcedAlignItem(text, start_time, end_time)`` in
seconds. Takes come at 24 kHz and are resampled to its 16 kHz by mlx-audio's resampler.

It runs on the proof pass's recognizer thread (narrate.worker.engine.recognizer.RecognizerThread: one MLX thread
of the process for both, with its own stream, off the decode loop)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from typing import Any

import mlx.core as mx
import numpy as np
from narrate.jobs.readalong.aligning import language_name
from narrate.jobs.readalong.timing import Word
from narrate.jobs.settings import SAMPLE_RATE
from narrate.worker.engine.models import quiet
from narrate.worker.engine.recognizer import MIN_SECONDS, RecognizerUnavailable, Role, SttModel

log = logging.getLogger("narrate.worker")
ROLE = Role(
    "aligner",
    "a forced aligner",
    "the word timings' aligner",
    "--word-timings DIR, or NARRATE_ALIGN_MODEL on the worker",
    "--word-timings",
)
RATE = 16_000  # the aligner's sample rate (ForcedAlignerModel.sample_rate)
GENERATE = {"audio", "text", "language"}  # the parameters of ForcedAlignerModel.generate narrate passes


def check_aligner_model(model: Any) -> None:
    """The loaded model is mlx-audio's forced aligner, with the ``generate`` narrate calls."""
    from mlx_audio.stt.models.qwen3_asr.qwen3_forced_aligner import ForcedAlignerModel

    inner = getattr(model, "_model", model)  # Qwen3-ASR's wrapper holds either model
    if not isinstance(inner, ForcedAlignerModel):
        raise RecognizerUnavailable(
            f"{type(inner).__module__}.{type(inner).__name__} is not a forced aligner "
            "(a Qwen3-ForcedAligner checkpoint is: NARRATE_ALIGN_MODEL)"
        )
    missing = GENERATE - set(inspect.signature(inner.generate).parameters)
    if missing:
        raise RuntimeError(f"mlx-audio's forced aligner's generate lacks {sorted(missing)}: word timings need them")


class MlxAligner(SttModel):
    """A loaded mlx-audio forced aligner (``load``), aligning on the recognizer's thread and MLX stream."""

    ROLE = ROLE

    def __init__(self, source: str, model: Any):
        check_aligner_model(model)
        super().__init__(source, getattr(model, "_model", model))

    def align(self, takes: Sequence[np.ndarray], *, texts: Sequence[str], languages: Sequence[str]) -> list[list[Word]]:
        """Each take's words with their times in seconds from its start, on the recognizer's thread."""
        return self.on_thread(self._align, list(takes), list(texts), list(languages))

    def _align(self, takes: list[np.ndarray], texts: list[str], languages: list[str]) -> list[list[Word]]:
        from mlx_audio.utils import resample_audio

        out: list[list[Word]] = []
        try:
            for take, text, language in zip(takes, texts, languages, strict=True):
                audio = np.asarray(resample_audio(np.asarray(take, np.float32), SAMPLE_RATE, RATE, axis=0), np.float32)
                if audio.size < RATE * MIN_SECONDS or not text.strip():
                    out.append([])
                    continue
                try:
                    with quiet():
                        result = self.model.generate(audio, text=text, language=language_name(language))
                except (ImportError, ValueError, IndexError) as e:  # a text it cannot split (no nagisa), no words
                    log.info("the aligner found no words in %r: %s: %s", text[:60], type(e).__name__, e)
                    out.append([])
                    continue
                out.append([(str(it.text), float(it.start_time), float(it.end_time)) for it in result])
        finally:
            mx.synchronize()
        return out
