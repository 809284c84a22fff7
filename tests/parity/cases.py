"""What the parity tests compare with Qwen's reference implementation (qwen-tts), in one place: the
random-weight checkpoints (built by narrate's own builder from a fixed seed), the codec codes, the
sentences and the voice. ``make_reference.py`` hands these to the reference and stores what it
computes under golden/; ``tests/system/test_parity.py`` computes the same with narrate and compares.

Every input is a pure function of the constants below, so anyone can rebuild them; the golden
manifest records a hash of each checkpoint's weights and of each input, and the tests first check
that what they rebuilt is what the reference was given.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).resolve().parent / "golden"
MANIFEST = GOLDEN / "manifest.json"


@dataclass(frozen=True)
class Checkpoint:
    name: str
    codec_attention_scale: float  # 1: the builder's random weights; above: attention as sharp as trained
    size: str = "tiny"
    dtype: str = "float32"  # the reference's own on a CPU: codes compared exactly
    seed: int = 3


# The tiny checkpoint as built, and one whose codec decoder attends sharply (q and k weights x8, logits x64):
# with random weights every frame attends almost evenly and the decoder's window changes the audio by 1e-4 of
# its peak; sharpened, by several per cent, as with trained weights (measured at the 0.6B shape: docs/models.md).
CHECKPOINTS = (Checkpoint("tiny", 1.0), Checkpoint("tiny-sharp", 8.0))

CODEC_FRAMES = 240  # 19.2 s: past the decoder's 72-frame window three times, under the reference's 300-frame chunks
SAMPLE_STRIDE = 61  # the golden audio keeps every 61st sample (a prime: every phase of a 1920-sample frame) ...
# ... and every frame's energy (sum of squares of its 1920 samples): together well under a megabyte.
SAMPLES_PER_FRAME = 1920

SENTENCES = (
    "The lighthouse keeper counted the ships twice.",
    "Rain fell on the harbour all night long, and nobody slept.",
    "Why?",
)
GREEDY_FRAMES = 32
REPETITION_PENALTIES = (1.0, 1.05)  # none, and the published generation_config.json's

VOICE_SECONDS = 3.0
SAMPLE_RATE = 24_000


def codec_codes() -> np.ndarray:
    """(CODEC_FRAMES, 16) int32 codes in [0, 2048) with zeros in them: a run of frames whose first code
    is 0 at the end (mlx-audio's decode() counts those as padding and cuts them), and zeros scattered."""
    rng = np.random.default_rng(20261207)
    codes = rng.integers(0, 2048, size=(CODEC_FRAMES, 16)).astype(np.int32)
    codes[rng.random(codes.shape) < 0.05] = 0
    codes[-8:, 0] = 0
    codes[100:104, :] = 0
    return codes


def voice_audio() -> np.ndarray:
    """VOICE_SECONDS of a voice-like test signal at 24 kHz: a gliding harmonic tone with noise, float32 in [-1, 1]."""
    t = np.arange(int(VOICE_SECONDS * SAMPLE_RATE)) / SAMPLE_RATE
    f0 = 140 + 40 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / SAMPLE_RATE
    tone = sum(np.sin(k * phase) / k for k in range(1, 8))
    noise = np.random.default_rng(5).standard_normal(t.size)
    return (0.25 * tone + 0.02 * noise).astype(np.float32) * 0.8


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def weights_digest(checkpoint: Path) -> str:
    """A hash of every safetensors file of a checkpoint (the reference read exactly these bytes)."""
    h = hashlib.sha256()
    for f in sorted(Path(checkpoint).rglob("*.safetensors")):
        h.update(f.relative_to(checkpoint).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def audio_summary(wav: np.ndarray, frames: int = CODEC_FRAMES) -> dict[str, np.ndarray]:
    """What the golden files keep of decoded audio: every SAMPLE_STRIDE-th sample and every frame's energy."""
    wav = np.asarray(wav, dtype=np.float32)[: frames * SAMPLES_PER_FRAME]
    return {
        "samples": wav[::SAMPLE_STRIDE].copy(),
        "energy": (wav.astype(np.float64).reshape(-1, SAMPLES_PER_FRAME) ** 2).sum(axis=1),
    }


def build(checkpoint: Checkpoint, root: Path) -> Path:
    """The checkpoint, written by narrate's builder under `root` (needs mlx: narrate's side only)."""
    from narrate.worker.testkit.random_checkpoint import write_checkpoint

    out = root / checkpoint.name
    if (out / "config.json").exists():
        return out
    return write_checkpoint(
        out,
        size=checkpoint.size,
        dtype=checkpoint.dtype,
        seed=checkpoint.seed,
        codec_attention_scale=checkpoint.codec_attention_scale,
    )
