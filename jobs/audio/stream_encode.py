"""The book's Ogg (Opus) and FLAC files encoded while it is synthesized, and its mp3 files when it is split
or in parts (an mp3 book in one file is encoded in segments: jobs/audio/mp3frames.py).

Opus in Ogg (pre-skip, page granules) does not join gaplessly by stream copy the way raw AAC frames
(jobs/audio/adts.py) and MP3 frames cut on a frame do, so these formats are not cut
into segments: each output file gets one ffmpeg that runs for the whole book, fed the book's
16-bit samples through a pipe in reading order as the units are rendered
(jobs/audio/segment_encoder.py, ordered mode). When the last sentence is in, only the last unit's audio
is left to encode. `--split chapters` gives every chapter file its own ffmpeg, started at the
chapter's first sample and closed at its last (at most two run at once with `chapters+book`);
`--max-part-hours` parts get one each, fed a chapter at a time (see PieceStreams).
Chapter marks and tags are written afterwards with mutagen (jobs/audio/tagging.py), since the chapter
times are known only at the end.

Every ffmpeg writes into the job's private scratch directory; the files reach the output
directory through BookWriter.finish (jobs/audio/book_writer.py) like every other. ``close()`` kills them: no
child outlives a stop, a cancel or a failure; a child of a worker killed outright reads the end of
its input and exits, and its scratch directory is removed by the next book written on the host."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from pathlib import Path

import numpy as np
from narrate.jobs.audio.layout import Piece
from narrate.jobs.ffmpeg import ffmpeg_failed
from narrate.jobs.outputs.outputs import FORMATS
from narrate.jobs.settings import SAMPLE_RATE

STREAMED = {".mp3", ".ogg", ".opus", ".flac"}
PCM_IN = ["-f", "s16le", "-ar", str(SAMPLE_RATE), "-ac", "1", "-i", "pipe:0"]


def streams_for(ext: str, split: str) -> bool:
    """Whether a book in this format and layout is encoded while synthesized."""
    return ext in STREAMED and split in ("", "chapters", "chapters+book")


class PcmEncoder:
    """One ffmpeg encoding the 16-bit mono samples piped to it (``write``) into `out`, with the
    output arguments `encode` (codec, muxer). Used for a book's streamed files and for each AAC
    segment (jobs/audio/segment_encoder.py). Its stderr goes to a log beside `out`, read for the error."""

    def __init__(self, ffmpeg: str, encode: list[str], out: Path, start: int = 0):
        self.out, self.start, self.samples = out, start, 0
        self.log = out.with_suffix(".log")
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                [ffmpeg, "-hide_banner", "-nostdin", "-v", "error", "-y", *PCM_IN, *encode, str(out)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )

    def write(self, data: np.ndarray) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(np.asarray(data, dtype="<i2").tobytes())
        except BrokenPipeError:  # ffmpeg ended early: its own error says why
            raise self._failed(self.proc.wait()) from None
        self.samples += int(data.size)

    def end_input(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()

    def finish(self) -> Path:
        """The encoded file, once its ffmpeg has written all of it."""
        self.end_input()
        rc = self.proc.wait()
        if rc != 0:
            raise self._failed(rc)
        self.log.unlink(missing_ok=True)
        return self.out

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        self.proc.wait()

    def _failed(self, rc: int) -> Exception:
        return ffmpeg_failed(rc, self.log.read_text("utf-8", "replace") if self.log.exists() else "")


class _Spill:
    """A chapter's samples kept in the scratch directory until its end is known (parts)."""

    def __init__(self, path: Path, start: int):
        self.path, self.start, self.samples = path, start, 0
        self.file = open(path, "xb")

    def write(self, data: np.ndarray) -> None:
        self.file.write(np.asarray(data, dtype="<i2").tobytes())
        self.samples += int(data.size)

    def drain_into(self, stream: PcmEncoder) -> None:
        self.file.close()
        try:
            with open(self.path, "rb") as f:
                while block := f.read(SPILL_BLOCK):
                    stream.write(np.frombuffer(block, dtype="<i2"))
        finally:
            self.path.unlink(missing_ok=True)

    def discard(self) -> None:
        self.file.close()
        self.path.unlink(missing_ok=True)


SPILL_BLOCK = 1 << 20


class PieceStreams:
    """``write(samples)`` in reading order (one thread), ``finish(piece, out, title, ext)`` for each
    output file after the last sentence (BookWriter's `mux` hook), ``close()`` always.

    `chapters` is the Segmenter's list of (start sample, title), read as it grows: a chapter is
    walked before any of its audio is rendered, so every boundary in what is written is known.

    Parts (`max_part_samples`) are chapters grouped greedily (jobs/audio/layout.py): whether a chapter
    joins the open part depends on where it ends. So a chapter's samples wait in a spill file in
    the scratch directory until the next chapter starts, then go to the open part's ffmpeg or a
    new one's; after the last sentence the last chapter is left to encode."""

    def __init__(
        self,
        ffmpeg: str,
        scratch: Path,
        ext: str,
        split: str,
        chapters: list[tuple[int, str]],
        max_part_samples: int | None = None,
    ):
        self.ffmpeg, self.scratch, self.ext, self.chapters = ffmpeg, scratch, ext, chapters
        self.limit = max_part_samples
        self.whole = split in ("", "chapters+book") and max_part_samples is None
        self.in_parts = split in ("", "chapters+book") and max_part_samples is not None
        self.per_chapter = split in ("chapters", "chapters+book")
        self.written = 0
        self._start: int | None = None  # the open chapter's first sample
        self._ended = False  # the last chapter is closed (after the last sentence)
        self._book: PcmEncoder | None = None
        self._chapter: PcmEncoder | None = None
        self._spill: _Spill | None = None
        self._part: PcmEncoder | None = None
        self._done: dict[tuple[str, int], PcmEncoder] = {}  # ("chapter"|"part", first sample): input ended
        self._lock = threading.Lock()  # write (the render thread) against close (the job thread)
        self._closed = False

    def write(self, data: np.ndarray) -> None:
        data = np.asarray(data, dtype="<i2")
        while data.size:
            n = data.size
            with self._lock:
                if self._closed:
                    raise RuntimeError("the book's encoders were closed")
                if self.whole and self._book is None:
                    self._book = self._open(0, "book")
                pending = None
                if self.per_chapter or self.in_parts:
                    cut = self._cut()
                    if self._start is None or cut == self.written:
                        pending = self._chapter_ends(self.written)
                        self._chapter_starts(self.written)
                        cut = self._cut()
                    if cut is not None:
                        n = min(n, cut - self.written)
                sinks = [s for s in (self._book, self._chapter, self._spill) if s is not None]
            if pending is not None:  # outside the lock: a close() must not wait for a pipe
                pending[0].drain_into(pending[1])
            for sink in sinks:
                sink.write(data[:n])
            self.written += n
            data = data[n:]

    def _cut(self) -> int | None:
        """Where the open chapter ends: the next chapter's first sample (None: not known yet, so
        not in what is being written)."""
        first = self._start if self._start is not None else -1
        return next((start for start, _ in self.chapters if start > first), None)

    def _chapter_starts(self, at: int) -> None:
        self._start = at
        if self.per_chapter:
            self._chapter = self._open(at, str(at))
        if self.in_parts:
            self._spill = _Spill(self.scratch / f"spill-{at}.raw", at)

    def _chapter_ends(self, at: int) -> tuple[_Spill, PcmEncoder] | None:
        """The open chapter ends at `at`: its file's ffmpeg finishes while the next one starts.
        Returns its spilled samples and the part they go to (the caller drains one into the
        other, without the lock)."""
        if self._chapter is not None:
            self._chapter.end_input()
            self._done[("chapter", self._chapter.start)], self._chapter = self._chapter, None
        if self._spill is None:
            return None
        spill, self._spill = self._spill, None
        assert self.limit is not None
        if self._part is None or at - self._part.start > self.limit:
            if self._part is not None:
                self._part.end_input()
                self._done[("part", self._part.start)] = self._part
            self._part = self._open(spill.start, f"part-{spill.start}")
        return spill, self._part

    def _open(self, start: int, name: str) -> PcmEncoder:
        muxer, codec = FORMATS[self.ext]
        return PcmEncoder(self.ffmpeg, [*codec, "-f", muxer], self.scratch / f"stream-{name}.partial{self.ext}", start)

    def finish(self, piece: Piece, out: Path, title: str | None, ext: str) -> None:
        """Put the file encoded for `piece` at `out` (in the scratch directory)."""
        with self._lock:
            pending = None
            if not self._ended:  # the last sentence is in: the last chapter ends with the book
                self._ended = True
                pending = self._chapter_ends(self.written)
                if self._part is not None:
                    self._done[("part", self._part.start)], self._part = self._part, None
        if pending is not None:
            pending[0].drain_into(pending[1])
        with self._lock:
            if piece.folder:
                stream = self._done.pop(("chapter", piece.start), None)
            elif self.in_parts:
                stream = self._done.pop(("part", piece.start), None)
            else:
                stream, self._book = self._book, None
        if stream is None or stream.start != piece.start or stream.samples != piece.end - piece.start:
            raise RuntimeError(
                f"the encoded stream for {piece.name} does not match it "
                f"({stream.samples if stream else 'none'} samples from {stream.start if stream else '-'}, "
                f"expected {piece.end - piece.start} from {piece.start})"
            )
        try:
            os.replace(stream.finish(), out)
        except BaseException:
            stream.kill()
            raise

    def close(self) -> None:
        with self._lock:
            self._closed = True
            streams = [s for s in (self._book, self._chapter, self._part, *self._done.values()) if s is not None]
            self._book = self._chapter = self._part = None
            self._done.clear()
            spill, self._spill = self._spill, None
        for s in streams:
            s.kill()
        if spill is not None:
            spill.discard()
