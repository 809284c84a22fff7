"""Audio for and from the tests: a synthetic voice sample, and any output file decoded with ffmpeg."""

from __future__ import annotations

import subprocess
import wave
from pathlib import Path

import numpy as np

SR = 24_000


def write_voice(path: Path, seconds: float = 3.0, amplitude: float = 0.3) -> Path:
    """A voiced, harmonic signal with a wobbling pitch: enough for the speaker encoder."""
    t = np.arange(int(SR * seconds)) / SR
    f0 = 120 + 15 * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / SR
    sig = sum(np.sin(k * phase) / k for k in range(1, 20))
    sig *= 0.5 + 0.5 * np.sin(2 * np.pi * 2.5 * t) ** 2
    sig = amplitude * sig / max(np.abs(sig).max(), 1e-9) if amplitude else np.zeros_like(t)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes((sig * 32767).astype("<i2").tobytes())
    return path


def decoded_samples(path: Path) -> np.ndarray:
    """Decode any output file to 24 kHz mono int16 with ffmpeg (independent of narrate's code)."""
    import imageio_ffmpeg

    proc = subprocess.run(
        [
            imageio_ffmpeg.get_ffmpeg_exe(),
            "-v",
            "error",
            "-i",
            str(path),
            "-f",
            "s16le",
            "-ac",
            "1",
            "-ar",
            str(SR),
            "pipe:1",
        ],
        capture_output=True,
        check=True,
    )
    return np.frombuffer(proc.stdout, dtype="<i2")
