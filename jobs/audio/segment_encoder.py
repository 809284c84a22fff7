"""The book rendered and encoded while synthesis continues (units and segments: jobs/audio/segments.py).

Every sentence walked in reading order is measured at once by a background thread in the job's
process (BS.1770 loudness and true peak, jobs/audio/assemble.py), so a unit's gains are known as soon as
its last sentence is. Its segments are then rendered by another background thread: for m4a/m4b
each into its own ffmpeg child, which encodes it to a raw AAC stream in the job's scratch
directory, trimmed for a gapless join (jobs/audio/adts.py); for the other formats into `write`, in
reading order: the pipes of the ffmpeg encoding the book's files (mp3, ogg/opus, flac:
jobs/audio/stream_encode.py) or the book's WAV (wav, and books in parts: one encode after the last
sentence); for mp3 each into its own ffmpeg child, which encodes it to raw MP3 frames, joined by the
mux (jobs/audio/mp3frames.py). During synthesis one thread
measures and one renders; after the last sentence the segments left are encoded by up to one
ffmpeg per CPU at once (four at most: memory stays flat). ``close()`` (a stop, a cancel, a
failure) ends the threads and kills the ffmpeg children; the scratch directory goes with the
BookWriter. A child of a worker that was killed outright reads the end of its input and exits;
the next book written on the host removes the dead scratch directory (jobs/outputs/scratch.py).

With `reuse` (jobs/audio/reuse.py) an m4a/m4b/mp3 segment found in the segment cache is taken from it instead of
encoded, and each one encoded is kept there; a redo's stitch follows the record of the book it redoes: its units'
gains are the record's, and only the sentences that changed are measured (their true peaks)."""

from __future__ import annotations

import bisect
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

from narrate.jobs.audio import adts, mp3frames
from narrate.jobs.audio.assemble import CheckpointMissing, Loudness, Sentences, render_segment
from narrate.jobs.audio.book_writer import ffmetadata
from narrate.jobs.audio.layout import Piece
from narrate.jobs.audio.reuse import Record, Reuse, record_of, segment_key
from narrate.jobs.audio.segments import Segment, Segmenter, Unit
from narrate.jobs.audio.stream_encode import PcmEncoder
from narrate.jobs.book.checkpoints import CheckpointStore
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.ffmpeg import run_ffmpeg
from narrate.jobs.outputs.outputs import AAC

log = logging.getLogger("narrate.jobs")
MAX_ENCODERS = 4  # ffmpeg AAC encoders at once after the last sentence (~30 MB each; a unit has ~7 segments)
ENCODE = [*AAC, "-f", "adts"]  # a segment's samples -> raw AAC (PcmEncoder pipes them in)
LOST: dict[int, float] = {}  # the gains of a unit that lost a checkpoint before it was measured


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


class SegmentEncoder:
    """``walked(sentences, closed units)`` as the Segmenter advances, ``drain()`` after the last
    sentence, ``close()`` always. `write` (WAV mode): where rendered samples go, in reading order;
    None: each segment is encoded to AAC in the scratch directory `scratch`."""

    def __init__(
        self,
        plan: Plan,
        spec: JobSpec,
        checkpoints: CheckpointStore,
        scratch: Path,
        ffmpeg: str,
        write: Callable | None = None,
        reuse: Reuse | None = None,
        ext: str = ".m4b",
    ):
        self.plan, self.spec, self.checkpoints = plan, spec, checkpoints
        self.mp3 = ext == ".mp3"  # segments of raw MP3 frames (jobs/audio/mp3frames.py); else of trimmed AAC
        self.encode, self.suffix = (mp3frames.ENCODE, "mp3") if self.mp3 else (ENCODE, "aac")
        self.scratch, self.ffmpeg, self.write = scratch, ffmpeg, write
        self.reuse = reuse or Reuse(None)
        self.follow: Record | None = self.reuse.follow
        self.sha: dict[int, str] = {}  # each sentence's checkpoint body hash, as walked
        self.keys: dict[int, str] = {}  # segment index -> its key in the segment cache
        self.reused = 0  # segments taken from the segment cache
        self.measured = 0  # sentences measured
        self._unit_gain: dict[int, float | None] = {}
        self.segments: list[Segment] = []
        self.encoded: dict[int, str] = {}  # segment index -> trimmed AAC file name (in scratch)
        self.missing: list[Segment] = []  # a checkpoint vanished before it was rendered: redo
        self.early = 0  # segments finished while synthesis was still running
        self.events: list[tuple[str, int, bool]] = []  # ("done", segment, during synthesis)
        self.synthesizing = True
        self._units: list[Unit] = []
        self._starts: list[int] = []  # first sentence of each unit
        self._loud: dict[int, Loudness] = {}
        self._gains: dict[int, dict[int, float] | None] = {}
        self._ready: dict[int, threading.Event] = {}
        self._measures: queue.Queue[tuple[int, Unit | None] | None] = queue.Queue()
        self._encodes: queue.Queue[Segment | None] = queue.Queue()
        self._measurer: threading.Thread | None = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._procs: set[PcmEncoder] = set()
        self._error: BaseException | None = None
        self._pending = 0
        self.on_encoded: Callable[[list[Segment], dict[int, str]], None] | None = None  # after each AAC segment

    # --- the job thread ---
    def walked(self, sentences: range, units: list[Unit], all_units: list[Unit]) -> None:
        """Sentences walked by the Segmenter, and the units it closed (`all_units`: its list)."""
        for u in all_units[len(self._units) :]:
            self._units.append(u)
            self._starts.append(u.first)
            self._ready[u.index] = threading.Event()
        if self._measurer is None:
            self._measurer = threading.Thread(target=self._measure_loop, name="narrate-loudness", daemon=True)
            self._measurer.start()
        for i in sentences:
            head = self.checkpoints.header(self.plan.keys[i])
            self.sha[i] = str(head["sha256"]) if head else ""
            if self.spec.loudness is not None and (self.follow is None or self.follow.sha[i] != self.sha[i]):
                self._measures.put((i, None))  # following a record: only what changed (its true peak)
        for u in units:
            self._measures.put((-1, u))  # its gains, after its sentences
            for seg in u.segments:
                self.segments.append(seg)
                with self._lock:
                    self._pending += 1
                self._encodes.put(seg)
        if units and not self._threads:
            self._start(1)

    def drain(self, beat: Callable[[], None] = lambda: None) -> None:
        """After the last sentence: the segments left, at once (up to one ffmpeg per CPU; one
        thread for the WAV, which is written in order); raises what a segment failed with."""
        self.synthesizing = False
        if self.write is None:
            self._start(min(cpus(), MAX_ENCODERS, self._pending) - len(self._threads))
        beaten = 0.0
        while True:
            with self._lock:
                if self._error is not None or self._pending == 0:
                    break
            if time.monotonic() - beaten >= 1.0:  # the hang watchdog: the job is making progress
                beat()
                beaten = time.monotonic()
            time.sleep(0.02)
        if self._error is not None:
            raise self._error

    def redo_missing(self, beat: Callable[[], None] = lambda: None) -> None:
        """Measure and render again what lost a checkpoint (made again by the caller)."""
        todo, self.missing = self.missing, []
        for u in {seg.unit for seg in todo}:
            if self._gains.get(u) is LOST:
                unit = self._units[u]
                stream = Sentences(self.plan, self.spec, self.checkpoints, first=unit.first, end=unit.last + 1)
                loud = Loudness()
                for index, x, pause in stream:
                    loud.feed(index, x, pause)
                self._gains[u] = loud.gains(self.spec.loudness) if self.spec.loudness is not None else None
                self._unit_gain[u] = loud.gain(self.spec.loudness) if self.spec.loudness is not None else None
        for seg in todo:
            with self._lock:
                self._pending += 1
            self._encodes.put(seg)
        if not self._threads:
            self._start(1)
        self.drain(beat)

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            procs = list(self._procs)
        for p in procs:
            p.kill()
        self._measures.put(None)
        for _ in self._threads:
            self._encodes.put(None)
        for t in [*self._threads, *([self._measurer] if self._measurer else [])]:
            t.join()
        self._threads, self._measurer = [], None

    # --- background threads ---
    def _measure_loop(self) -> None:
        """Loudness in reading order; a unit's gains once its last sentence is measured."""
        lost: set[int] = set()
        while True:
            task = self._measures.get()
            if task is None or self._stop.is_set():
                return
            i, unit = task
            try:
                if unit is not None:
                    if unit.index in lost:
                        self._gains[unit.index] = LOST
                    else:
                        self._unit_gains(unit, self._loud.pop(unit.index, None))
                    self._ready[unit.index].set()
                    continue
                u = bisect.bisect_right(self._starts, i) - 1
                if u in lost:
                    continue
                try:
                    for index, x, pause in Sentences(self.plan, self.spec, self.checkpoints, first=i, end=i + 1):
                        self._loud.setdefault(u, Loudness()).feed(index, x, pause)
                        self.measured += 1
                except CheckpointMissing:
                    lost.add(u)
                    self._loud.pop(u, None)
            except BaseException as e:  # handed to the job thread by drain()
                with self._lock:
                    if self._error is None and not self._stop.is_set():
                        self._error = e
                return

    def _unit_gains(self, unit: Unit, loud: Loudness | None) -> None:
        """A unit's gains: measured, or (following a record) the record's, a changed sentence's by its peak."""
        target, u = self.spec.loudness, unit.index
        if target is None:
            self._gains[u] = self._unit_gain[u] = None
        elif self.follow is not None:
            g = self.follow.unit_gain[u]
            assert g is not None  # the record's fingerprint holds the same target
            kept = {i: self.follow.gains[i] for i in range(unit.first, unit.last + 1)}
            redone = loud.gains(target, g) if loud else {}
            both = {i: redone.get(i, kept[i]) for i in kept}
            self._gains[u] = {i: g if v is None else v for i, v in both.items()}
            self._unit_gain[u] = g
        elif loud is not None:
            self._gains[u], self._unit_gain[u] = loud.gains(target), loud.gain(target)
        else:
            self._gains[u] = self._unit_gain[u] = None

    def _start(self, n: int) -> None:
        for _ in range(max(0, n)):
            t = threading.Thread(target=self._run, name="narrate-segments", daemon=True)
            self._threads.append(t)
            t.start()

    def _run(self) -> None:
        while True:
            seg = self._encodes.get()
            if seg is None or self._stop.is_set():
                return
            try:
                ready = self._ready[seg.unit]
                while not ready.wait(0.1):
                    if self._stop.is_set():
                        return
                gains = self._gains[seg.unit]
                if gains is LOST or (self.write is not None and self.missing):  # the WAV is written in order
                    self.missing.append(seg)
                else:
                    if not self._cached(seg, gains):
                        self._one(seg, gains)
                    with self._lock:
                        self.events.append(("done", seg.index, self.synthesizing))
                        self.early += self.synthesizing
                        during, segments, encoded = self.synthesizing, list(self.segments), dict(self.encoded)
                    if during and self.on_encoded is not None and self.write is None:  # chapters to play meanwhile
                        self.on_encoded(segments, encoded)
            except CheckpointMissing:
                self.missing.append(seg)  # nothing of it was written (checked first)
            except BaseException as e:  # handed to the job thread by drain()
                with self._lock:
                    if self._error is None and not self._stop.is_set():
                        self._error = e
            finally:
                with self._lock:
                    self._pending -= 1

    def _one(self, seg: Segment, gains: dict[int, float] | None) -> None:
        stream = Sentences(self.plan, self.spec, self.checkpoints, first=seg.first, end=seg.last + 1)
        for i in range(seg.first, seg.last + 1):
            if not self.checkpoints.has(self.plan.keys[i]):
                raise CheckpointMissing(i)
        if self.write is not None:
            try:
                render_segment(seg, stream, gains, self.write, lambda: not self._stop.is_set())
            except CheckpointMissing as e:  # half of it is in the WAV: the attempt cannot go on
                raise RuntimeError(f"{e} (removed while the book was written); `narrate resume` continues") from None
            return
        raw = self.scratch / f"seg-{seg.index:05d}.raw.{self.suffix}"
        enc = PcmEncoder(self.ffmpeg, self.encode, raw)
        with self._lock:
            self._procs.add(enc)
        try:
            render_segment(seg, stream, gains, enc.write, lambda: not self._stop.is_set())
            enc.finish()  # raises ffmpeg's error (a stop's kill too: not reported once stopped)
        finally:
            with self._lock:
                self._procs.discard(enc)
            if enc.proc.poll() is None:
                enc.kill()
        if self._stop.is_set():
            return
        name = f"seg-{seg.index:05d}.{self.suffix}"
        last = seg.last == len(self.plan.sentences) - 1
        if self.mp3:  # kept whole: which frames a file keeps depends on whether the segment ends it (mux)
            os.replace(raw, self.scratch / name)
        else:
            adts.trim(raw, self.scratch / name, seg.samples, first=seg.index == 0, last=last)
        with self._lock:
            self.encoded[seg.index] = name
        key = self.keys.get(seg.index)
        if key is not None and self.reuse.cache is not None:
            try:
                self.reuse.cache.keep(key, self.scratch / name, self.suffix)
            except OSError as e:  # the book goes on without it
                log.warning("could not keep segment %d in the segment cache: %s", seg.index, e)

    def _cached(self, seg: Segment, gains: dict[int, float] | None) -> bool:
        """An m4a/m4b/mp3 segment taken from the segment cache (its key noted either way)."""
        if self.write is not None or self.reuse.cache is None:
            return False
        span = range(seg.first, seg.last + 1)
        pauses = [self.plan.pause_after_ms(i, self.spec) for i in span]
        last = seg.last == len(self.plan.sentences) - 1
        shas = [self.sha.get(i, "") for i in span]
        if not all(shas):
            return False
        key = segment_key(seg, shas, [gains[i] if gains is not None else None for i in span], pauses, last, self.encode)
        self.keys[seg.index] = key
        name = f"seg-{seg.index:05d}.{self.suffix}"
        if not self.reuse.cache.take(key, self.scratch / name, self.suffix):
            return False
        with self._lock:
            self.encoded[seg.index] = name
            self.reused += 1
        return True

    def record(self, segmenter: Segmenter) -> Record:
        """What the next stitch of this book (a redo's) follows (jobs/audio/reuse.py)."""
        gains: list[float | None] = [None] * len(self.plan.sentences)
        for unit in segmenter.units:
            got = self._gains.get(unit.index)
            for i in range(unit.first, unit.last + 1):
                gains[i] = got.get(i) if isinstance(got, dict) and got is not LOST else None
        unit_gain = [self._unit_gain.get(u.index) for u in segmenter.units]
        shas = [self.sha.get(i, "") for i in range(len(self.plan.sentences))]
        keys = [self.keys[s.index] for s in self.segments if s.index in self.keys]
        return record_of(segmenter, self.reuse.fingerprint, shas, unit_gain, gains, keys)

    # --- after drain: the files ---
    def mux(self, piece: Piece, out: Path, title: str | None, ext: str) -> None:
        """One output file (the book, a part or a chapter) from its segments, by stream copy."""
        start, end = self._cut(piece.start), self._cut(piece.end)
        segs = [s for s in self.segments if start <= s.start < end]
        names = [self.encoded[s.index] for s in segs]
        if self.mp3:  # chapters and tags: mutagen, afterwards (jobs/audio/tagging.py)
            mp3frames.mux(
                self.ffmpeg, self.scratch, [(n, s.samples) for n, s in zip(names, segs, strict=True)], end - start, out
            )
            return
        shift = piece.start - start
        spans = [replace_span(s, shift) for s in piece.chapters]
        if spans:
            spans[-1] = (spans[-1][0], end - start, spans[-1][2])
        brand = ["-brand", "M4B "] if ext == ".m4b" else []
        joined = ["-y", *adts.mux_args(names, primed=segs[0].index == 0)]
        if not spans:
            tags = ["-metadata", f"title={title}"] if title else []
            run_ffmpeg(self.ffmpeg, [*joined, *tags, "-c:a", "copy", *brand, "-f", "ipod", out.name], cwd=self.scratch)
            return
        # Chapters in a second stream copy, from an MP4 of the joined audio: muxed straight from the
        # ADTS stream (whose length ffmpeg can only estimate), a book longer than about 90 s got
        # only Nero's chapter list and a reference to a QuickTime chapter track that was never
        # written, and Apple's players read the QuickTime track.
        audio = out.with_name(f".{out.stem}.audio.m4a")
        meta = out.with_suffix(".ffmeta")
        meta.write_text(ffmetadata(title, spans), encoding="utf-8")
        try:
            run_ffmpeg(self.ffmpeg, [*joined, "-c:a", "copy", "-f", "ipod", audio.name], cwd=self.scratch)
            run_ffmpeg(
                self.ffmpeg,
                [
                    "-y",
                    "-i",
                    audio.name,
                    "-i",
                    meta.name,
                    "-map",
                    "0:a",
                    "-map_metadata",
                    "1",
                    "-map_chapters",
                    "1",
                    "-c:a",
                    "copy",
                    *brand,
                    "-f",
                    "ipod",
                    out.name,
                ],
                cwd=self.scratch,
            )
        finally:
            audio.unlink(missing_ok=True)

    def _cut(self, sample: int) -> int:
        """The cut before the chapter that starts at `sample` (the start of its segment), or the end."""
        for s in self.segments:
            if s.start <= sample < s.end:
                return s.start
        return self.segments[-1].end


def replace_span(span: tuple[int, int, str], shift: int) -> tuple[int, int, str]:
    return (span[0] + shift, span[1] + shift, span[2])
