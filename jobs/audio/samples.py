"""Voice samples: validate, convert to 24 kHz mono 16-bit PCM, identify by content (sha256)."""

from __future__ import annotations

import hashlib
import io
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded where audio is read or written (`narrate status` and friends need none)
    import numpy as np

from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.ffmpeg import FfmpegError, run_ffmpeg
from narrate.jobs.inputs import read_input
from narrate.jobs.settings import MAX_VOICE_BYTES, MAX_VOICE_SECONDS, MIN_VOICE_SECONDS, SAMPLE_RATE

SILENCE_RMS = 1e-3  # of full scale; below this the sample carries no voice
# A 60 s sample decodes in well under a second; a file that keeps ffmpeg busy this long is refused.
DECODE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Voice:
    """A normalized voice sample: 24 kHz mono int16 WAV bytes and their sha256."""

    wav: bytes
    sha256: str
    seconds: float


def read_voice(path: Path, ffmpeg: str) -> Voice:
    path = Path(path)
    raw = read_input(path, f"voice file {path}", MAX_VOICE_BYTES)
    if not raw:
        raise BadInput(f"voice file {path} is empty")
    return normalize_voice(raw, origin=f"voice file {path}", ffmpeg=ffmpeg)


def decode_voice(raw: bytes, origin: str, ffmpeg: str) -> bytes:
    """The first audio stream of `raw` as 24 kHz mono s16le PCM, at most MAX_VOICE_SECONDS + 1 s.

    ffmpeg reads a private copy from a file, not from a pipe: MP4/MOV files (an .m4a written by
    ffmpeg or by many recorders) keep their index at the end, which ffmpeg reaches only by
    seeking. The copy holds exactly the bytes that were checked, in a directory only this user
    can enter, under a name without an extension (ffmpeg goes by the content, and recent ffmpeg
    builds then refuse playlists), and it is removed on every way out."""
    try:
        tmp = tempfile.TemporaryDirectory(prefix="narrate-voice-")
    except OSError as e:
        raise NarrateError(f"cannot make a temporary directory for {origin}: {e.strerror or e}; set TMPDIR") from None
    with tmp:
        copy = Path(tmp.name) / "voice"
        try:
            copy.write_bytes(raw)
        except OSError as e:
            raise NarrateError(
                f"cannot copy {origin} to {tmp.name}: {e.strerror or e}; free some space there or set TMPDIR"
            ) from None
        try:
            return run_ffmpeg(
                ffmpeg,
                [
                    "-protocol_whitelist",
                    "file",
                    "-i",
                    f"file:{copy}",
                    "-map",
                    "0:a:0",
                    "-t",
                    str(MAX_VOICE_SECONDS + 1),
                    "-ac",
                    "1",
                    "-ar",
                    str(SAMPLE_RATE),
                    "-f",
                    "s16le",
                    "-acodec",
                    "pcm_s16le",
                    "pipe:1",
                ],
                timeout=DECODE_TIMEOUT_S,
            )
        except FfmpegError as e:
            if "matches no streams" in e.log:
                raise BadInput(f"{origin} has no audio stream (a video without sound, or an image?)") from None
            if "Nothing was written" in e.log:  # it opened but nothing decoded: an absurd rate or channel layout
                raise BadInput(
                    f"{origin} has no audio ffmpeg can decode ({e.first_line}); export it again as mono or stereo wav"
                ) from None
            detail = e.first_line
            raise BadInput(f"{origin} is not audio ffmpeg can read ({detail}); use wav, flac, mp3 or m4a") from None


def normalize_voice(raw: bytes, origin: str, ffmpeg: str) -> Voice:
    import numpy as np

    pcm = decode_voice(raw, origin, ffmpeg)
    samples = np.frombuffer(pcm, dtype="<i2")
    seconds = samples.size / SAMPLE_RATE
    if samples.size == 0:
        raise BadInput(f"{origin} holds no audio samples")
    if seconds < MIN_VOICE_SECONDS:
        raise BadInput(f"{origin} is {seconds:.2f} s long; give at least {MIN_VOICE_SECONDS:.0f} s of speech")
    if seconds > MAX_VOICE_SECONDS:
        raise BadInput(f"{origin} is longer than {MAX_VOICE_SECONDS:.0f} s; trim it to 5-30 s of clean speech")
    level = samples.astype(np.float64) / 32768.0
    rms = float(np.std(level))  # about the mean: a constant level (DC, or NaN samples decoded) is no sound
    if rms < SILENCE_RMS:
        raise BadInput(f"{origin} is silent (RMS {rms:.1e} about a level of {np.mean(level):+.2f}); record some speech")
    wav = wav_bytes(pcm)
    return Voice(wav=wav, sha256=hashlib.sha256(wav).hexdigest(), seconds=seconds)


def wav_bytes(pcm16: bytes) -> bytes:
    """24 kHz mono 16-bit PCM as WAV bytes (a normalized voice, a clip)."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(pcm16)
    return buf.getvalue()


def voice_samples(wav: bytes) -> np.ndarray:
    """The float32 samples in [-1, 1) of a normalized voice WAV."""
    import numpy as np

    with wave.open(io.BytesIO(wav), "rb") as w:
        frames = w.readframes(w.getnframes())
    return np.frombuffer(frames, dtype="<i2").astype(np.float32) / 32768.0
