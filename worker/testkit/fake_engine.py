"""A deterministic stand-in for the MLX engine, for fault tests only (NARRATE_ENGINE=fake). It
implements narrate.jobs.task.model_protocols.Engine and imports no mlx.

Each sentence becomes a tone whose pitch and length come from sha256(text), so a fault-free
run gives byte-exact expected output. Controlled by environment variables:
NARRATE_FAKE_DELAY_MS (per sentence), NARRATE_FAKE_FAIL_ON / _ABORT_ON / _HANG_ON (a substring:
raise / os.abort() / block signals and sleep forever on a matching sentence), and
NARRATE_FAKE_LOG (a file that gets one line per synthesized sentence: index, pid) and
NARRATE_FAKE_TEXT_LOG (one JSON line per synthesized sentence: index, language, the text spoken).
NARRATE_FAKE_HOLD_FILE (a path): while that file exists, the engine waits before each batch after the
first, so a test holds a job mid-way for as long as it needs instead of guessing a delay.
NARRATE_FAKE_SEEDED=1 makes a tone's loudness depend on the sentence's seed too, so a retake (a new
seed) sounds different. Every tone is remembered with its text and seed (``SPOKEN``, and the JSON lines
of the file NARRATE_FAKE_SPOKEN, for a later process), which is how the fake recognizer
(fake_recognizer.py) "hears" it.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from narrate.jobs.book.synthesis import Chunk, OnBatch, OnDropped, Sentence, VoiceEmbedding
from narrate.jobs.book.voice import VoiceRef
from narrate.jobs.task.model_protocols import RiderSource

SAMPLES_PER_FRAME = 1920  # 24 kHz / 12.5 codec frames a second


class FakeEngine:
    model_key = "fake"
    source = "fake"
    quant = "bf16"
    rides = False  # a fault test's book never takes other jobs along (they wait, or it yields)

    def __init__(self, batch_size: int | None = None):
        self.batch_size = batch_size or 4

    def voice(self, r: Any, ref: VoiceRef) -> VoiceEmbedding:
        """Any voice (clone, preset, design) is spoken the same: the tones depend on the text alone."""
        return VoiceEmbedding(ref, cache_hit=True, encoder_runs=0)

    def synthesize(
        self,
        sentences: Sequence[Sentence],
        voice: VoiceEmbedding | Mapping[str, VoiceEmbedding],
        on_batch: OnBatch | None = None,
        riders: RiderSource | None = None,
        on_dropped: OnDropped | None = None,
    ) -> Iterator[Chunk]:
        """Tones by text (`voice`, one or a cast's, changes nothing), in batches of `batch_size`."""
        delay = int(os.environ.get("NARRATE_FAKE_DELAY_MS", "0")) / 1000
        log = os.environ.get("NARRATE_FAKE_LOG")
        text_log = os.environ.get("NARRATE_FAKE_TEXT_LOG")
        hold = os.environ.get("NARRATE_FAKE_HOLD_FILE")
        for start in range(0, len(sentences), self.batch_size):
            batch = sentences[start : start + self.batch_size]
            while hold and start > 0 and os.path.exists(hold):
                time.sleep(0.02)
            if on_batch is not None:
                on_batch([s.index for s in batch])
            out = []
            for s in batch:
                self._faults(s.text)
                time.sleep(delay)
                pcm, frames = tone(s.text, s.budget, s.seed if os.environ.get("NARRATE_FAKE_SEEDED") else None)
                remember(pcm, s.text, s.seed)
                out.append((s, (pcm, frames)))
                if log:
                    with open(log, "a") as f:
                        f.write(f"{s.index} {os.getpid()}\n")
                if text_log:
                    with open(text_log, "a") as f:
                        f.write(json.dumps({"index": s.index, "language": s.language, "text": s.text}) + "\n")
            for s, (pcm, frames) in out:  # a batch's sentences come out together, as on the GPU
                yield Chunk(s.index, pcm, frames, True, frames >= s.budget, 1)

    @staticmethod
    def _faults(text: str) -> None:
        def hit(name: str) -> bool:
            needle = os.environ.get(name)
            return bool(needle and needle in text)

        if hit("NARRATE_FAKE_FAIL_ON"):
            raise RuntimeError("fake engine failure (NARRATE_FAKE_FAIL_ON)")
        if hit("NARRATE_FAKE_ABORT_ON"):
            os.abort()
        if hit("NARRATE_FAKE_HANG_ON"):  # like a native call that never returns to Python
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM, signal.SIGINT})
            while True:
                time.sleep(3600)


def tone(text: str, budget: int, seed: int | None = None) -> tuple[np.ndarray, int]:
    h = hashlib.sha256(text.encode()).digest()
    frames = max(1, min(budget, len(text) // 6 + 1))
    freq = 110 + h[0] * 2
    t = np.arange(frames * SAMPLES_PER_FRAME) / 24_000
    level = 0.2 if seed is None else 0.1 + (seed % 97) / 970  # NARRATE_FAKE_SEEDED: each seed its own loudness
    return (level * np.sin(2 * np.pi * freq * t)).astype(np.float32), frames


SPOKEN: dict[str, tuple[str, int]] = {}  # audio_key(tone) -> (text, seed): what the fake recognizer hears


def audio_key(pcm: np.ndarray) -> str:
    """A tone's identity as a checkpoint stores it (int16), so a take read back from its checkpoint matches."""
    ints = np.round(np.clip(np.asarray(pcm, dtype=np.float32), -1.0, 1.0) * 32767.0).astype("<i2")
    return hashlib.sha256(ints.tobytes()).hexdigest()


def remember(pcm: np.ndarray, text: str, seed: int) -> None:
    key = audio_key(pcm)
    SPOKEN[key] = (text, seed)
    spoken = os.environ.get("NARRATE_FAKE_SPOKEN")
    if spoken:
        with open(spoken, "a") as f:
            f.write(json.dumps({"key": key, "text": text, "seed": seed}) + "\n")
