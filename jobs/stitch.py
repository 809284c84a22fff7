"""Stitching: sentences and pauses are streamed into a temporary WAV (pydub segments, written as
they come: no quadratic concatenation, constant memory), then one ffmpeg encode writes the
output format and a rename makes the file appear whole. No partial output is ever left."""

from __future__ import annotations

import contextlib
import os
import secrets
import warnings
import wave
from pathlib import Path

import numpy as np

from .ffmpeg import run_ffmpeg
from .outputs import FORMATS
from .settings import SAMPLE_RATE

with warnings.catch_warnings():  # pydub warns about ffmpeg on PATH; narrate passes its own
    warnings.simplefilter("ignore")
    from pydub import AudioSegment


def int16_segment(ints: np.ndarray) -> AudioSegment:
    """16-bit mono samples (e.g. a checkpoint) -> a pydub segment."""
    return AudioSegment(
        data=np.asarray(ints, dtype="<i2").tobytes(), sample_width=2, frame_rate=SAMPLE_RATE, channels=1
    )


class BookWriter:
    """``with BookWriter(path, ffmpeg) as book: book.add(seg); book.pause(ms); ...; book.finish()``"""

    def __init__(self, final: Path, ffmpeg: str, title: str | None = None):
        self.final = Path(final)
        self.ffmpeg = ffmpeg
        self.title = title
        token = secrets.token_hex(4)
        self.tmp_wav = self.final.parent / f".{self.final.name}.{token}.partial.wav"
        self.tmp_out = self.final.parent / f".{self.final.name}.{token}.partial{self.final.suffix}"
        self.samples = 0
        self._wav: wave.Wave_write | None = None
        self._done = False

    def __enter__(self) -> BookWriter:
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self._wav = wave.open(str(self.tmp_wav), "wb")
        self._wav.setnchannels(1)
        self._wav.setsampwidth(2)
        self._wav.setframerate(SAMPLE_RATE)
        return self

    def add(self, segment: AudioSegment) -> None:
        assert self._wav is not None
        self._wav.writeframesraw(segment.raw_data)
        self.samples += int(segment.frame_count())

    def pause(self, ms: int) -> None:
        if ms > 0:
            self.add(AudioSegment.silent(duration=ms, frame_rate=SAMPLE_RATE))

    def finish(self) -> Path:
        """Encode to the output's format and move it into place atomically."""
        assert self._wav is not None
        self._wav.close()
        self._wav = None
        muxer, codec = FORMATS[self.final.suffix.lower()]
        if self.final.suffix.lower() == ".wav":
            os.replace(self.tmp_wav, self.final)
        else:
            meta = ["-metadata", f"title={self.title}"] if self.title else []
            run_ffmpeg(
                self.ffmpeg,
                ["-y", "-i", str(self.tmp_wav), *codec, *meta, "-f", muxer, str(self.tmp_out)],
            )
            os.replace(self.tmp_out, self.final)
        self._done = True
        return self.final

    def __exit__(self, *exc: object) -> None:
        if self._wav is not None:
            with contextlib.suppress(Exception):
                self._wav.close()
        for tmp in (self.tmp_wav, self.tmp_out):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
