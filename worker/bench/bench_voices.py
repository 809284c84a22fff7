"""``narrate bench``'s voices: synthetic voice samples (no speech synthesizer needed), one per cloned
voice of ``--voices N``, their x-vectors, and the preset speaker of ``--voice-kind preset``.

Voice 0 is the bench's one voice (plain, mlx-batch and the one-voice narrate variants speak it);
voices 1..N-1 differ from it and from each other in pitch, vibrato, brightness and syllable rate,
so each has its own x-vector (checked: N equal x-vectors would measure one voice N times).
"""

from __future__ import annotations

import wave
from pathlib import Path

import mlx.core as mx
import numpy as np
from narrate.jobs.errors import NarrateError
from narrate.worker.engine.models import LoadedModel
from narrate.worker.engine.row_voices import RowVoice
from narrate.worker.engine.voice_cache import speaker_embedding

SAMPLE_RATE = 24_000
PRESET_SPEAKER = "ryan"  # one of the two English presets
MAX_VOICES = 32  # --voices: at most this many cloned voices


def synthetic_voice(k: int = 0, seconds: float = 4.0) -> np.ndarray:
    """Voice `k`: a voiced harmonic signal with a wobbling pitch, shaped into syllables. Voice 0 is
    120 Hz with a 3 Hz vibrato; voice k > 0 draws its own pitch (85-260 Hz), vibrato, harmonic tilt
    and syllable rate from a generator seeded with k."""
    f0, vibrato_hz, vibrato_depth, tilt, syllables_hz = 120.0, 3.0, 15.0, 1.0, 2.5
    if k:
        rng = np.random.default_rng(k)
        f0 = 120.0 * 2 ** rng.uniform(-0.5, 1.1)
        vibrato_hz, vibrato_depth = rng.uniform(2.0, 6.0), rng.uniform(5.0, 25.0)
        tilt, syllables_hz = rng.uniform(0.6, 1.6), rng.uniform(2.0, 4.5)
    t = np.arange(int(SAMPLE_RATE * seconds)) / SAMPLE_RATE
    pitch = f0 + vibrato_depth * np.sin(2 * np.pi * vibrato_hz * t)
    phase = 2 * np.pi * np.cumsum(pitch) / SAMPLE_RATE
    sig: np.ndarray = sum(np.sin(h * phase) / h**tilt for h in range(1, 20))
    sig *= 0.5 + 0.5 * np.sin(2 * np.pi * syllables_hz * t) ** 2
    out: np.ndarray = (0.3 * sig / np.abs(sig).max()).astype(np.float32)
    return out


def write_wav(path: Path, samples: np.ndarray) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def voice_files(folder: Path, n: int) -> list[Path]:
    """`n` synthetic voice samples as WAV files in `folder` (voice.wav, voice-1.wav, ...)."""
    return [write_wav(folder / ("voice.wav" if k == 0 else f"voice-{k}.wav"), synthetic_voice(k)) for k in range(n)]


def clone_embeddings(loaded: LoadedModel, paths: list[Path]) -> list[mx.array]:
    """Each sample's x-vector in the talker's dtype (one speaker-encoder run each); NarrateError if
    two are equal."""
    from narrate.jobs.audio.samples import voice_samples

    out = [speaker_embedding(loaded, mx.array(voice_samples(p.read_bytes()))) for p in paths]
    for i, a in enumerate(out):
        for j in range(i):
            if mx.array_equal(a, out[j]).item():
                raise NarrateError(f"the bench's synthetic voices {j} and {i} have the same x-vector on this model")
    return out


def preset_voice(loaded: LoadedModel) -> RowVoice:
    """The preset variants' speaker: PRESET_SPEAKER, or the CustomVoice model's first."""
    return RowVoice.preset(PRESET_SPEAKER if PRESET_SPEAKER in loaded.speakers else loaded.speakers[0])
