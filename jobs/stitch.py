"""Stitching: sentences and pauses are streamed into a temporary WAV in a private scratch
directory (pydub segments, written as they come: no quadratic concatenation, constant memory),
one ffmpeg encode writes the output format there, and the result is copied into a temp file in
the output directory and renamed into place. No partial output is ever left, and nothing is
written outside the output root (jobs/confined.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
import wave
from pathlib import Path
from typing import BinaryIO

import numpy as np

from . import confined
from .confined import OutputRoot
from .errors import BadInput
from .ffmpeg import run_ffmpeg
from .outputs import FORMATS
from .scratch import Scratch
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
COPY_BUFFER = 1 << 20


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
    """``with BookWriter(path, ffmpeg) as book: book.add(seg); book.pause(ms); ...; book.finish()``

    `root` confines the output (an OutputRoot pinned at job start, or a directory; default: the
    output's own directory): the book is written only inside it, never through a link below it
    (see jobs/confined.py). `workdir` holds the private scratch directories for the intermediate
    WAV and the encode (default: the system temp dir); only the final copy's temp file, with a
    short random name, is ever made in the output directory."""

    def __init__(
        self,
        final: Path,
        ffmpeg: str,
        title: str | None = None,
        root: OutputRoot | Path | None = None,
        workdir: Path | None = None,
    ):
        self.final = Path(final)
        self.ffmpeg = ffmpeg
        self.title = title
        self.root, self.parts, self.name = _locate(self.final, root)
        self.samples = 0
        self.chapters: list[tuple[int, str]] = []  # (start sample, title)
        self._scratch = Scratch(workdir)
        self._wav_file: BinaryIO | None = None
        self._wav: wave.Wave_write | None = None
        self._dir: int | None = None  # the output directory, reached from the root without following links
        self._tmp: str | None = None  # our temp file in it

    def __enter__(self) -> BookWriter:
        try:
            scratch = self._scratch.open()
            self._wav_file = open(scratch / "book.partial.wav", "xb")  # closed in finish or __exit__
            self._wav = wave.open(self._wav_file, "wb")
            self._wav.setnchannels(1)
            self._wav.setsampwidth(2)
            self._wav.setframerate(SAMPLE_RATE)
        except BaseException:
            self.__exit__()
            raise
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
        """Encode to the output's format (with chapters where it has them) in the scratch dir,
        copy it into a temp file in the output directory and rename it into place."""
        assert self._wav is not None and self._wav_file is not None and self._scratch.path is not None
        self._wav.close()
        self._wav = None
        self._wav_file.close()
        self._wav_file = None
        scratch = self._scratch.path
        wav = scratch / "book.partial.wav"
        ext = self.final.suffix.lower()
        muxer, codec = FORMATS[ext]
        encoded = scratch / f"encoded.partial{ext}"
        if ext == ".wav":
            encoded = wav
        elif ext in CHAPTER_FORMATS and self.chapters:
            meta = scratch / "chapters.partial.ffmeta"
            meta.write_text(ffmetadata(self.title, self.chapter_spans()), encoding="utf-8")
            run_ffmpeg(
                self.ffmpeg,
                ["-y", "-i", str(wav), "-i", str(meta), "-map", "0:a", "-map_metadata", "1",
                 "-map_chapters", "1", *codec, "-f", muxer, str(encoded)],
            )  # fmt: skip
        else:
            tags = ["-metadata", f"title={self.title}"] if self.title else []
            run_ffmpeg(self.ffmpeg, ["-y", "-i", str(wav), *codec, *tags, "-f", muxer, str(encoded)])
        if encoded != wav:
            wav.unlink()  # free the space before the copy
        self._place(encoded)
        return self.final

    def _place(self, encoded: Path) -> None:
        """Copy into a new temp file in the output directory (reached from the root without
        following links), then rename it over the target if the directory is still the same."""
        self._dir = confined.open_dir(self.root, self.parts, create=True)
        while self._tmp is None:
            name = confined.temp_name()
            self._scratch.record(self.root, list(self.parts), name)  # so a sweeper can remove it if we die
            try:
                out = confined.create_new(self._dir, name)
            except FileExistsError:
                continue
            self._tmp = name
        with os.fdopen(out, "wb") as dst, open(encoded, "rb") as src:
            shutil.copyfileobj(src, dst, COPY_BUFFER)
            dst.flush()
            os.fsync(dst.fileno())
        confined.rename_into_place(self._dir, self._tmp, self.name, self.root, self.parts)
        self._tmp = None

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
        for f in (self._wav, self._wav_file):
            if f is not None:
                with contextlib.suppress(Exception):
                    f.close()
        self._wav = self._wav_file = None
        if self._dir is not None:
            if self._tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self._tmp, dir_fd=self._dir)
                self._tmp = None
            os.close(self._dir)
            self._dir = None
        self._scratch.close()


def _locate(final: Path, root: OutputRoot | Path | None) -> tuple[OutputRoot, tuple[str, ...], str]:
    """(pinned root, directories below it, file name) of the output."""
    if root is None:
        return OutputRoot.pin(final.parent), (), final.name
    pinned = root if isinstance(root, OutputRoot) else OutputRoot.pin(root)
    bases = [pinned.path]
    if not isinstance(root, OutputRoot):  # the root as given, or as resolved
        bases.insert(0, Path(os.path.abspath(os.path.expanduser(root))))
    for base in bases:
        if final.is_relative_to(base) and final != base:
            rel = final.relative_to(base).parts
            return pinned, rel[:-1], rel[-1]
    raise BadInput(f"output {final} is not under the output root {pinned.path}")
