"""Stitching: sentences and pauses are streamed into a temporary WAV in a private scratch
directory (pydub segments, written as they come: no quadratic concatenation, constant memory),
one ffmpeg encode writes the output format there (or, for m4a/m4b, `mux` joins the segments
encoded during synthesis: jobs/audio/segment_encoder.py), and the result is copied into a temp file in
the output directory and renamed into place. No partial output is ever left, and nothing is
written outside the output root (jobs/outputs/confined.py)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import warnings
import wave
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, Protocol

import numpy as np
from narrate.jobs.audio import layout
from narrate.jobs.audio.bookmeta import Tags
from narrate.jobs.audio.tagging import write_tags
from narrate.jobs.errors import BadInput
from narrate.jobs.ffmpeg import run_ffmpeg
from narrate.jobs.outputs import confined
from narrate.jobs.outputs.confined import OutputRoot
from narrate.jobs.outputs.outputs import FORMATS
from narrate.jobs.outputs.scratch import Scratch
from narrate.jobs.settings import SAMPLE_RATE
from narrate.jobs.xmltext import xml_text

with warnings.catch_warnings():  # pydub warns about ffmpeg on PATH; narrate passes its own
    warnings.simplefilter("ignore")
    from pydub import AudioSegment


def int16_segment(ints: np.ndarray) -> AudioSegment:
    """16-bit mono samples (e.g. a checkpoint) -> a pydub segment."""
    return AudioSegment(
        data=np.asarray(ints, dtype="<i2").tobytes(), sample_width=2, frame_rate=SAMPLE_RATE, channels=1
    )


CHAPTER_FORMATS = {".m4b", ".m4a"}  # chapters from ffmpeg's muxer; mp3/flac/ogg/opus: jobs/audio/tagging.py


class OutputGuard(Protocol):
    """Asked about every output file before any is placed (may refuse: raise), told after each."""

    def before(self, path: Path) -> None: ...

    def after(self, path: Path, sha256: str) -> None: ...


COPY_BUFFER = 1 << 20


def _escape(value: str) -> str:
    value = xml_text(value)  # no NUL or other control ffmpeg would cut the file at (jobs/xmltext.py)
    for ch in "\\=;#\n":
        value = value.replace(ch, "\\" + ch)
    return value


def ffmetadata(title: str | None, spans: list[tuple[int, int, str]]) -> str:
    """ffmpeg's metadata file: the title and one [CHAPTER] per span (times in ms)."""
    lines = [";FFMETADATA1"] + ([f"title={_escape(title)}"] if title else [])
    for start, end, name in spans:
        lines += [
            "[CHAPTER]",
            "TIMEBASE=1/1000",
            f"START={start * 1000 // SAMPLE_RATE}",
            f"END={end * 1000 // SAMPLE_RATE}",
            f"title={_escape(name)}",
        ]
    return "\n".join(lines) + "\n"


class BookWriter:
    """``with BookWriter(path, ffmpeg) as book: book.add(seg); book.pause(ms); ...; book.finish()``

    `place_audio` False: the encoded audio is only what the files added with ``add_made`` are made from (a book
    delivered as its read-along EPUB, `--format epub`); it is never put in place itself.

    `root` confines the output (an OutputRoot pinned at job start, or a directory; default: the
    output's own directory): the book is written only inside it, never through a link below it
    (see jobs/outputs/confined.py). `workdir` holds the private scratch directories for the intermediate
    WAV and the encode (default: the system temp dir); only the final copy's temp file, with a
    short random name, is ever made in the output directory."""

    def __init__(
        self,
        final: Path,
        ffmpeg: str,
        title: str | None = None,
        root: OutputRoot | Path | None = None,
        workdir: Path | None = None,
        wav: bool = True,
        place_audio: bool = True,
    ):
        self.final = Path(final)
        self.place_audio = place_audio  # False: the audio is made for the files made from it (an EPUB), not placed
        self.ffmpeg = ffmpeg
        self.title = title
        self.root, self.parts, self.name = _locate(self.final, root)
        self.samples = 0
        self.chapters: list[tuple[int, str]] = []  # (start sample, title)
        self._scratch = Scratch(workdir)
        self._wav_file: BinaryIO | None = None
        self._wav: wave.Wave_write | None = None
        self._want_wav = wav  # False: the audio comes as encoded segments (`mux`), not as samples
        self.mux: Callable[[layout.Piece, Path, str | None, str], None] | None = None
        self._dir: int | None = None  # the output directory, reached from the root without following links
        self._tmp: str | None = None  # our temp file in it
        self._staged: list[tuple[int, str]] = []  # (directory, temp file) copied, not yet renamed
        self._dirs: dict[tuple[str, ...], int] = {}  # output folders open (each reached without following links)
        self.tags: Tags | None = None  # embedded after the encode (jobs/audio/tagging.py)
        self.split = ""  # "", "chapters", "chapters+book" (jobs/audio/layout.py)
        self.chapter_numbers: list[int] = []  # each chapter's number in the whole book (--chapters), for names
        self.max_part_samples: int | None = None
        self._extra: list[tuple[Path, tuple[str, ...], str]] = []  # text files to place beside the book
        self._made: list[tuple[str, Callable[[Path | None, Path], Path]]] = []  # files made from the encoded book
        self.sha256: dict[Path, str] = {}  # of every file written
        self.written: list[Path] = []

    def __enter__(self) -> BookWriter:
        try:
            scratch = self._scratch.open()
            if not self._want_wav:
                return self
            self._wav_file = open(scratch / "book.partial.wav", "xb")  # closed in finish or __exit__
            self._wav = wave.open(self._wav_file, "wb")
            self._wav.setnchannels(1)
            self._wav.setsampwidth(2)
            self._wav.setframerate(SAMPLE_RATE)
        except BaseException:
            self.__exit__()
            raise
        return self

    @property
    def scratch(self) -> Path:
        """The private scratch directory (while the writer is open)."""
        assert self._scratch.path is not None
        return self._scratch.path

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

    def write_pcm(self, ints: np.ndarray) -> None:
        """16-bit mono samples straight into the book."""
        assert self._wav is not None
        data = np.asarray(ints, dtype="<i2")
        self._wav.writeframesraw(data.tobytes())
        self.samples += int(data.size)

    def add_text(self, name: str, text: str) -> None:
        """A text file (subtitles, manifest) to put beside the book, in place with it."""
        assert self._scratch.path is not None
        src = self._scratch.path / f"side-{len(self._extra)}.partial"
        src.write_text(text, encoding="utf-8")
        self._extra.append((src, (), name))

    def add_made(self, name: str, make: Callable[[Path | None, Path], Path]) -> None:
        """A file to put beside the book, made once the book is encoded: `make(book file, scratch
        directory)` returns it (in the scratch directory); the book file is None when only chapter
        files or parts were written."""
        self._made.append((name, make))

    def finish(self, guard: OutputGuard | None = None) -> Path:
        """Encode to the output's format (with chapters where it has them; or the pieces of
        `self.split`) in the scratch dir, tag, then copy each file into a temp file in its
        output directory and rename it into place. `guard` is asked about every file before
        any is placed, and told about each once it is. With `mux` set (no WAV), each piece is
        made by it from the encoded segments instead of encoded from the WAV."""
        assert self._scratch.path is not None and (self.mux is not None or self._wav is not None)
        if self._wav is not None and self._wav_file is not None:
            self._wav.close()
            self._wav = None
            self._wav_file.close()
            self._wav_file = None
        scratch = self._scratch.path
        wav = scratch / "book.partial.wav"
        ext = self.final.suffix.lower()
        todo: list[tuple[Path, tuple[str, ...], str]] = []
        plain = not self.split and not self.max_part_samples
        for n, piece in enumerate(
            layout.pieces(
                self.name,
                self.title,
                self.samples,
                self.chapter_spans(),
                self.split,
                self.max_part_samples,
                self.chapter_numbers,
            )
        ):
            whole = piece.start == 0 and piece.end == self.samples
            encoded = wav if ext == ".wav" and plain else scratch / f"encoded-{n}.partial{ext}"
            if self.mux is not None:
                self.mux(piece, encoded, piece.title if piece.track else self.title, ext)
            elif encoded != wav:
                self._encode(
                    wav,
                    encoded,
                    piece.title if piece.track else self.title,
                    piece.chapters,
                    None if whole else (piece.start, piece.end),
                )
            if ext != ".wav" and (self.tags is not None or piece.chapters):
                tags = self.tags or Tags(title=piece.title if piece.track else self.title)
                per = replace(tags, title=piece.title, track=piece.track) if piece.track else tags
                write_tags(encoded, per, piece.chapters)
            todo.append((encoded, piece.folder, piece.name))
        book_file = next((src for src, folder, name in todo if not folder and name == self.name), None)
        todo = todo if self.place_audio else []
        todo += [(make(book_file, scratch), (), name) for name, make in self._made]
        if self._want_wav and (ext != ".wav" or not plain):
            wav.unlink()  # free the space before the copy
        todo += self._extra
        finals = [self.final.parent.joinpath(*folder, name) for _, folder, name in todo]
        if guard is not None:
            for path in finals:
                guard.before(path)
        for (src, folder, _name), path in zip(todo, finals, strict=True):  # every copy first: a folder
            self.sha256[path] = self._stage(src, (*self.parts, *folder))  # that fails leaves nothing placed
        placed: list[Path] = []
        for (_src, folder, name), path, (fd, tmp) in zip(todo, finals, list(self._staged), strict=True):
            try:
                confined.rename_into_place(fd, tmp, name, self.root, (*self.parts, *folder))
            except BadInput as e:
                if placed:  # said as it is: some files are in place already
                    shown = ", ".join(str(p) for p in placed)
                    raise BadInput(str(e).replace("nothing was written", f"only {shown} was written")) from None
                raise
            self._staged.remove((fd, tmp))
            placed.append(path)
            if guard is not None:
                guard.after(path, self.sha256[path])
        self.written = finals
        return self.final

    def _encode(
        self,
        wav: Path,
        encoded: Path,
        title: str | None,
        spans: list[tuple[int, int, str]],
        window: tuple[int, int] | None,
    ) -> None:
        ext = self.final.suffix.lower()
        muxer, codec = FORMATS[ext]
        cut = ["-af", f"atrim=start_sample={window[0]}:end_sample={window[1]},asetpts=N/SR/TB"] if window else []
        if ext in CHAPTER_FORMATS and spans:
            meta = encoded.with_suffix(".ffmeta")
            meta.write_text(ffmetadata(title, spans), encoding="utf-8")
            run_ffmpeg(
                self.ffmpeg,
                [
                    "-y",
                    "-i",
                    str(wav),
                    "-i",
                    str(meta),
                    "-map",
                    "0:a",
                    "-map_metadata",
                    "1",
                    "-map_chapters",
                    "1",
                    *cut,
                    *codec,
                    "-f",
                    muxer,
                    str(encoded),
                ],
            )
        else:
            tags = ["-metadata", f"title={title}"] if title else []
            run_ffmpeg(self.ffmpeg, ["-y", "-i", str(wav), *cut, *codec, *tags, "-f", muxer, str(encoded)])

    def _stage(self, encoded: Path, parts: tuple[str, ...]) -> str:
        """Copy into a new temp file in the output directory (reached from the root without
        following links), kept open in ``_staged`` until ``finish`` renames it over its target if
        the directory is still the same. Returns the sha256 of what was copied."""
        if parts not in self._dirs:  # one descriptor a folder (a book split in 1,000 chapters: one folder)
            self._dirs[parts] = confined.open_dir(self.root, parts, create=True)
        self._dir = self._dirs[parts]
        while self._tmp is None:
            tmp = confined.temp_name()
            self._scratch.record(self.root, list(parts), tmp)  # so a sweeper can remove it if we die
            try:
                out = confined.create_new(self._dir, tmp)
            except FileExistsError:
                continue
            self._tmp = tmp
        with os.fdopen(out, "wb") as dst, open(encoded, "rb") as src:
            hashing = _Hashing(dst)
            shutil.copyfileobj(src, hashing, COPY_BUFFER)
            dst.flush()
            os.fsync(dst.fileno())
        self._staged.append((self._dir, self._tmp))
        self._dir = self._tmp = None
        return hashing.digest.hexdigest()

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
        if self._dir is not None and self._tmp is not None:
            self._staged.append((self._dir, self._tmp))
        self._dir = self._tmp = None
        for fd, tmp in self._staged:  # copies never renamed into place: removed
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
        self._staged = []
        for fd in self._dirs.values():
            os.close(fd)
        self._dirs = {}
        self._scratch.close()


class _Hashing:
    """A file that hashes what is written through it."""

    def __init__(self, f: BinaryIO):
        self.f = f
        self.digest = hashlib.sha256()

    def write(self, block: bytes) -> int:
        self.digest.update(block)
        return self.f.write(block)

    def flush(self) -> None:
        self.f.flush()

    def fileno(self) -> int:
        return self.f.fileno()


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
