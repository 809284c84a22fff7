"""A job's book, stitched and encoded while it is synthesized.

Opened before synthesis: every checkpoint saved is reported (``saved``), the segments it completes
(jobs/audio/segments.py) are normalized, rendered and encoded in the background (jobs/audio/segment_encoder.py).
For ogg/opus and flac (and an mp3 split or in parts) the rendered units are piped
in reading order into one ffmpeg per output file, which encodes during synthesis too
(jobs/audio/stream_encode.py). After the last sentence, ``finish`` walks what is left (a checkpoint that
vanished meanwhile is synthesized again through `again`), encodes the remaining segments in parallel, then
muxes the book's files from the segments (m4a/m4b, mp3), ends the streamed encodes (ogg/opus, flac) or
encodes the WAV once (.wav, and m4a/m4b whose chapter pauses hold no cut), adds subtitles, tags,
chapters and the read-along files (with word timings: the word-level WebVTT, and the EPUB's overlays word
by word) and puts every file in place
(jobs/audio/book_writer.py BookWriter: scratch, confined temp file, rename). Leaving it any other way (a
stop, a cancel, a failure) kills the ffmpeg children and removes the scratch directory: nothing is
written to the output directory before ``finish`` places the files."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from narrate.jobs.audio import assemble, previews, subtitles
from narrate.jobs.audio.reuse import Reuse
from narrate.jobs.audio.segments import Heard, Segmenter, cuts_at_chapters
from narrate.jobs.audio.stream_encode import PieceStreams, streams_for
from narrate.jobs.audio.subtitles import Cue
from narrate.jobs.book import cache
from narrate.jobs.book.checkpoints import Checkpoint, CheckpointStore
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.result import ChapterMark
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.selection import spans
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.outputs import ownership
from narrate.jobs.outputs.outputs import OutputRoot, audio_of
from narrate.jobs.readalong import word_vtt as word_subtitles
from narrate.jobs.readalong import writer as readalong
from narrate.jobs.readalong.timing import Word
from narrate.jobs.server import store
from narrate.jobs.settings import DAY_S, SAMPLE_RATE, default
from narrate.jobs.task.context import JobContext
from narrate.jobs.task.superseding import REDO_OF
from redis import RedisError
from rq.job import Job

if TYPE_CHECKING:
    from narrate.jobs.audio.book_writer import BookWriter
    from narrate.jobs.audio.segment_encoder import SegmentEncoder

SEGMENTED = {".m4a", ".m4b", ".mp3"}  # encoded segment by segment, joined by stream copy (adts.py, mp3frames.py)
WHOLE_ONLY = {".mp3"}  # segmented only as one file: a split's or a part's chapter marks (mutagen) start at its chapter
PREVIEWED = {".m4a", ".m4b"}  # chapters playable while the rest is synthesized (jobs/audio/previews.py)

log = logging.getLogger("narrate.jobs")


@dataclass(frozen=True)
class EncodePath:
    """How a book's files are encoded; one rule for the job and the stitch benchmark.
    ``segmented``: m4a/m4b from AAC segments (not when a split or parts need a cut at a chapter whose pause
    holds none), an mp3 book in one file from MP3 segments, joined by stream copy; ``streamed``: ogg/opus and
    flac, and an mp3 split or in parts, piped into ffmpeg during synthesis; neither (``wav``): a WAV written
    during synthesis, encoded once at the end."""

    ext: str
    segmented: bool
    streamed: bool

    @classmethod
    def choose(cls, final: Path, plan: Plan, spec: JobSpec) -> EncodePath:
        ext = final.suffix.lower()
        plain = not spec.split and spec.max_part_hours is None
        segmented = ext in SEGMENTED and (plain or (ext not in WHOLE_ONLY and cuts_at_chapters(plan, spec)))
        return cls(ext, segmented, not segmented and streams_for(ext, spec.split))

    @property
    def wav(self) -> bool:
        return not (self.segmented or self.streamed)

    def open(
        self,
        book: BookWriter,
        ffmpeg: str,
        plan: Plan,
        spec: JobSpec,
        checkpoints: CheckpointStore,
        segmenter: Segmenter,
        reuse: Reuse | None = None,
    ) -> Encoders:
        """The background encoders of `book` (its scratch directory), wired to it: rendered audio goes
        to the streamed files, to the WAV, or (segmented) nowhere but the AAC segments; ``book.mux``
        builds its files from them."""
        from narrate.jobs.audio.segment_encoder import SegmentEncoder

        streams = None
        if self.streamed:
            streams = PieceStreams(
                ffmpeg, book.scratch, self.ext, spec.split, segmenter.chapters, assemble.max_part_samples(spec)
            )
        try:
            write = streams.write if streams else None if self.segmented else book.write_pcm
            encoder = SegmentEncoder(plan, spec, checkpoints, book.scratch, ffmpeg, write, reuse, self.ext)
        except BaseException:
            if streams is not None:
                streams.close()
            raise
        book.mux = streams.finish if streams else encoder.mux if self.segmented else None
        return Encoders(encoder, streams)


@dataclass(frozen=True)
class Encoders:
    encoder: SegmentEncoder
    streams: PieceStreams | None

    def close(self) -> None:
        """Kill what still runs: the streams first, so a render blocked on a full pipe ends at once."""
        try:
            if self.streams is not None:
                self.streams.close()
        finally:
            self.encoder.close()


@dataclass(frozen=True)
class Stitched:
    samples: int
    sha256: str
    chapters: list[ChapterMark]
    frames: list[int]
    runaways: list[int]
    retried: list[int]
    segments: int
    encoded_early: int  # segments done before the last sentence was synthesized
    tail_s: float  # the last sentence -> every file in place
    cues: list[Cue] = field(default_factory=list)  # each sentence's samples in the book, and its chapter
    words: dict[int, list[Word]] = field(default_factory=dict)  # --word-timings: each sentence's words, if any


WordsOf = Callable[
    [], dict[int, list[Word]]
]  # every sentence's words, once every take is final (jobs/task/word_timings.py)


class Stitcher:
    def __init__(
        self,
        ctx: JobContext,
        spec: JobSpec,
        doc: Document,
        plan: Plan,
        checkpoints: CheckpointStore,
        root: OutputRoot,
        final: Path,
        todo: list[Sentence],
        words: WordsOf | None = None,
    ):
        self.ctx, self.spec, self.doc, self.plan, self.checkpoints = ctx, spec, doc, plan, checkpoints
        self.words_of = words
        self.root, self.final = root, final
        self.audio = audio_of(final)  # an EPUB output (--format epub): its audio, an .m4a inside it, not placed
        self.waiting = {s.index for s in todo}  # not checkpointed by this attempt yet
        self.path = EncodePath.choose(self.audio, plan, spec)
        cap = cache.cap_bytes(ctx.settings.cache_max_gb)  # a redo follows the stitch it redoes (jobs/audio/reuse.py)
        self.reuse = Reuse.open(ctx.settings.home, cap, plan, spec, (ctx.job.meta or {}).get(REDO_OF))
        self.segmenter = Segmenter(plan, spec, follow=self.reuse.follow.cuts if self.reuse.follow else None)
        self.book: BookWriter | None = None
        self.encoders: Encoders | None = None
        self.previews: previews.ChapterPreviews | None = None

    @property
    def encoder(self) -> SegmentEncoder | None:
        return self.encoders.encoder if self.encoders else None

    def __enter__(self) -> Stitcher:
        from narrate.jobs.audio.book_writer import BookWriter  # pydub: loaded on workers only

        ffmpeg = ffmpeg_exe(self.ctx.settings.ffmpeg)
        self.book = BookWriter(
            self.audio,
            ffmpeg,
            title=self.doc.title,
            root=self.root,
            workdir=self.ctx.settings.home / "stitch",
            wav=self.path.wav,
            place_audio=self.audio == self.final,
        )
        self.book.__enter__()
        try:
            self.encoders = self.path.open(
                self.book, ffmpeg, self.plan, self.spec, self.checkpoints, self.segmenter, self.reuse
            )
            if self.path.segmented and self.path.ext in PREVIEWED:  # each chapter playable once encoded meanwhile
                self.previews = self._previews()
                self.encoders.encoder.on_encoded = self.previews.update
            self._advance(self._ready)  # what earlier attempts, the cache or the parts left
        except BaseException:
            self.__exit__()
            raise
        return self

    def _previews(self) -> previews.ChapterPreviews:
        assert self.book is not None
        chapters = spans(sorted(self.plan.chapter_at.items()), len(self.plan.sentences), self.doc.title)
        return previews.ChapterPreviews(
            self.ctx.job.connection, self.ctx.job.id, self.root, self.spec.output, chapters, self.book.scratch
        )

    def saved(self, index: int) -> None:
        """A sentence's checkpoint was saved (the job thread, during synthesis)."""
        self.waiting.discard(index)
        self._advance(self._ready)

    def _ready(self, i: int) -> Heard | None:
        return None if i in self.waiting else self._header(i)

    def _header(self, i: int) -> Heard | None:
        h = self.checkpoints.header(self.plan.keys[i])
        return Heard(h["samples"], int(h["frames"]), bool(h["runaway"]), int(h["takes"])) if h else None

    def _advance(self, lookup: Callable[[int], Heard | None]) -> None:
        assert self.encoder is not None
        walked, closed = self.segmenter.advance(lookup)
        self.encoder.walked(walked, closed, self.segmenter.units)

    def finish(self, again: Callable[[Sentence], Checkpoint]) -> Stitched:
        assert self.book is not None and self.encoder is not None
        t0 = time.monotonic()
        ctx, plan, book, encoder = self.ctx, self.plan, self.book, self.encoder

        def made(i: int) -> Heard | None:  # after synthesis: every sentence has a checkpoint, or gets one
            got = self._header(i)
            if got is None:
                again(plan.sentences[i])
                got = self._header(i)
            return got

        self._advance(made)
        assert self.segmenter.done
        encoder.drain(ctx.beat)
        while encoder.missing:  # a checkpoint vanished before its segment was rendered
            for u in {seg.unit for seg in encoder.missing}:
                unit = self.segmenter.units[u]
                for i in range(unit.first, unit.last + 1):
                    if not self.checkpoints.verify(plan.keys[i]):
                        again(plan.sentences[i])
            encoder.redo_missing(ctx.beat)
        seg = self.segmenter
        book.samples, book.chapters = seg.samples, list(seg.chapters)
        meta = assemble.book_meta(self.doc)
        cover = store.get_cover(ctx.job.connection, self.spec.cover) if self.spec.cover else None
        book.tags = assemble.tags_for(self.spec, self.doc.title, meta, cover)
        book.split, book.max_part_samples = self.spec.split, assemble.max_part_samples(self.spec)
        book.chapter_numbers = list(self.doc.chapter_numbers)  # --chapters 1,3: chapter 3's file says 03
        spans = book.chapter_spans()
        cues = subtitles.with_chapters(seg.cues, spans)
        for fmt in filter(None, self.spec.subtitles.split(",")):
            text = subtitles.render(fmt, cues, SAMPLE_RATE, self.final.name, book.samples, spans)
            book.add_text(f"{self.final.stem}.{fmt}", text)
        words = self.words_of() if self.words_of is not None else {}
        if self.words_of is not None:  # --word-timings: karaoke-style WebVTT (jobs/readalong/word_vtt.py)
            book.add_text(f"{self.final.stem}.words.vtt", word_subtitles.word_vtt(cues, SAMPLE_RATE, words))
        along = self.spec.readalong if self.audio == self.final else "epub"  # an EPUB output is that EPUB alone
        if along:  # an EPUB with media overlays, an audiobook manifest (jobs/readalong)
            readalong.add(book, along, ctx.job.id, self.doc, plan, cues, spans, SAMPLE_RATE, book.ffmpeg, words)
        n = len(plan.sentences)
        ctx.check_canceled(n, n)  # the last moment: no output once canceled
        book.finish(_Owned(ctx.job, self.root, self.spec))
        self._drop_previews()  # the book's own files replace them
        self._keep_record()
        heard = seg.heard
        return Stitched(
            samples=book.samples,
            sha256=book.sha256.get(self.final, ""),
            chapters=[ChapterMark(t, a / SAMPLE_RATE) for a, _, t in spans],
            frames=[h.frames for h in heard],
            runaways=[i for i, h in enumerate(heard) if h.runaway],
            retried=[i for i, h in enumerate(heard) if h.takes > 1],
            segments=len(seg.segments),
            encoded_early=encoder.early,
            tail_s=round(time.monotonic() - t0, 3),
            cues=cues,
            words=words,
        )

    def _keep_record(self) -> None:
        """What a redo of this book follows (jobs/audio/reuse.py); the book is in place: a failure is only logged."""
        assert self.encoder is not None
        if self.reuse.cache is None:
            return
        try:
            self.reuse.cache.save(self.ctx.job.id, self.encoder.record(self.segmenter))
        except (OSError, ValueError) as e:
            log.warning("job %s: the record of its stitch was not kept: %s", self.ctx.job.id, e)
        if self.reuse.follow is not None:
            enc = self.encoder
            log.info(
                "job %s: stitched following the book it redoes: %d of %d segments kept, %d sentences measured",
                self.ctx.job.id,
                enc.reused,
                len(self.segmenter.segments),
                enc.measured,
            )

    def __exit__(self, *exc: object) -> None:
        try:
            if self.encoders is not None:
                self.encoders.close()
        finally:
            if self.book is not None:
                self.book.__exit__()
            goes_on = self.ctx.stopped_early or self.ctx.canceled == "taken"  # requeued, or another worker's now
            if exc and exc[0] is not None and self.path.segmented and not goes_on:
                self._drop_previews()  # ended here for good (canceled, deleted, failed): no chapters of it left

    def _drop_previews(self) -> None:
        if self.previews is not None:
            self.previews.close()  # an encoder thread still running makes none after this
        try:
            previews.remove(self.ctx.job.connection, self.root.path, self.ctx.job.id, self.spec.output)
        except (OSError, RedisError) as e:
            log.warning("job %s: its chapter previews were not removed: %s", self.ctx.job.id, e)


@dataclass(frozen=True)
class _Owned:
    """The ownership rules (jobs/outputs/ownership.py) for every file the job writes."""

    job: Job
    root: OutputRoot
    spec: JobSpec

    def before(self, path: Path) -> None:
        rel = path.relative_to(self.root.path).as_posix()
        ownership.check_before_write(self.job.connection, rel, self.job.id, path, self.spec.overwrite)

    def after(self, path: Path, sha256: str) -> None:
        ttl = self.job.result_ttl  # the job's keep time: its index of paths goes with it
        keep_s = int(ttl) if ttl is not None and ttl > 0 else default("keep_days") * DAY_S
        ownership.record_written(
            self.job.connection, path.relative_to(self.root.path).as_posix(), self.job.id, sha256, keep_s
        )
