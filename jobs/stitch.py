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


CHAPTER_FORMATS = {".m4b", ".m4a", ".mp3"}


def _escape(value: str) -> str:
    for ch in "\\=;#\n":
        value = value.replace(ch, "\\" + ch)
    return value


def ffmetadata(title: str | None, spans: list[tuple[int, int, str]]) -> str:
    """ffmpeg's metadata file: the title and one [CHAPTER] per span (times in ms)."""
    lines = [";FFMETADATA1"] + ([f"title={_escape(title)}"] if title else [])
    for start, end, name in spans:
        lines += ["[CHAPTER]", "TIMEBASE=1/1000", f"START={start * 1000 // SAMPLE_RATE}",
                  f"END={end * 1000 // SAMPLE_RATE}", f"title={_escape(name)}"]  # fmt: skip
    return "\n".join(lines) + "\n"


class BookWriter:
    """``with BookWriter(path, ffmpeg) as book: book.add(seg); book.pause(ms); ...; book.finish()``"""

    def __init__(self, final: Path, ffmpeg: str, title: str | None = None):
        self.final = Path(final)
        self.ffmpeg = ffmpeg
        self.title = title
        token = secrets.token_hex(4)
        self.tmp_wav = self.final.parent / f".{self.final.name}.{token}.partial.wav"
        self.tmp_out = self.final.parent / f".{self.final.name}.{token}.partial{self.final.suffix}"
        self.tmp_meta = self.final.parent / f".{self.final.name}.{token}.partial.ffmeta"
        self.samples = 0
        self.chapters: list[tuple[int, str]] = []  # (start sample, title)
        self._wav: wave.Wave_write | None = None

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

    def mark_chapter(self, title: str) -> None:
        """A chapter starts at the current end of the book."""
        self.chapters.append((self.samples, title))

    def finish(self) -> Path:
        """Encode to the output's format (with chapters where it has them) and move it into
        place atomically."""
        assert self._wav is not None
        self._wav.close()
        self._wav = None
        ext = self.final.suffix.lower()
        muxer, codec = FORMATS[ext]
        if ext == ".wav":
            os.replace(self.tmp_wav, self.final)
        elif ext in CHAPTER_FORMATS and self.chapters:
            self.tmp_meta.write_text(ffmetadata(self.title, self.chapter_spans()), encoding="utf-8")
            run_ffmpeg(
                self.ffmpeg,
                ["-y", "-i", str(self.tmp_wav), "-i", str(self.tmp_meta), "-map", "0:a", "-map_metadata", "1",
                 "-map_chapters", "1", *codec, "-f", muxer, str(self.tmp_out)],
            )  # fmt: skip
            os.replace(self.tmp_out, self.final)
        else:
            meta = ["-metadata", f"title={self.title}"] if self.title else []
            run_ffmpeg(self.ffmpeg, ["-y", "-i", str(self.tmp_wav), *codec, *meta, "-f", muxer, str(self.tmp_out)])
            os.replace(self.tmp_out, self.final)
        return self.final

    def chapter_spans(self) -> list[tuple[int, int, str]]:
        """(start, end, title) in samples, covering the whole book (an untitled opening is
        named after the book)."""
        marks = list(self.chapters)
        if not marks:
            return []
        if marks[0][0] > 0:
            marks.insert(0, (0, self.title or "Opening"))
        ends = [start for start, _ in marks[1:]] + [self.samples]
        return [(start, end, title) for (start, title), end in zip(marks, ends, strict=True)]

    def __exit__(self, *exc: object) -> None:
        if self._wav is not None:
            with contextlib.suppress(Exception):
                self._wav.close()
        for tmp in (self.tmp_wav, self.tmp_out, self.tmp_meta):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
