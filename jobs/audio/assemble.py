"""Assembling the book from the checkpoints, streamed: sentences with short fades at their edges
(no clicks at joins), the sentence/paragraph/chapter pauses, loudness gains, subtitles and
the manifest, tags and cover.

Two passes over the checkpoints of a stream (a segment of the book, jobs/audio/segments.py, or the whole
book), one sentence in memory at a time. The first (only with a loudness target) feeds the exact
stream into a BS.1770 meter (jobs/audio/loudness.py) and notes each sentence's true peak; the gain is
target - measured, one for the stream. The true-peak ceiling (-3 dBTP, kept with a
0.5 dB margin for the codec) is guarded per sentence: a sentence whose peak the gain would push
over it gets only the gain that brings its peak to the ceiling, which lowers the book's loudness
slightly when many sentences are that peaky (speech at -19 LUFS rarely is). The second pass
writes the samples, times the cues and marks the chapters."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
from narrate.jobs.audio.bookmeta import MAX_COVER_BYTES, Tags, clean_tag, image_kind, series_parts
from narrate.jobs.audio.loudness import LoudnessMeter, gain_for
from narrate.jobs.audio.segments import Segment
from narrate.jobs.audio.subtitles import Cue
from narrate.jobs.book.checkpoints import Checkpoint, CheckpointStore
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.documents.documents import BookMeta, Document
from narrate.jobs.settings import SAMPLE_RATE

if TYPE_CHECKING:
    from narrate.jobs.audio.book_writer import BookWriter

FADE_SAMPLES = SAMPLE_RATE * 5 // 1000  # 5 ms at each end of every sentence
TRUE_PEAK_CEILING_DB = -3.5  # under the -3 dBTP target, with room for the codec's overshoot
SCALE = 32767.0


def faded(pcm: np.ndarray) -> np.ndarray:
    """Float samples of a sentence with a short raised-cosine fade in and out."""
    x = np.asarray(pcm, dtype=np.float64) / SCALE
    n = min(FADE_SAMPLES, x.size // 2)
    if n > 0:
        ramp = 0.5 - 0.5 * np.cos(np.pi * (np.arange(n) + 1) / (n + 1))
        x[:n] *= ramp
        x[-n:] *= ramp[::-1]
    return x


class CheckpointMissing(RuntimeError):
    def __init__(self, index: int):
        super().__init__(f"sentence {index} has no checkpoint after synthesis")
        self.index = index


@dataclass
class Sentences:
    """Stream the plan's sentences from their checkpoints, with fades and pauses."""

    plan: Plan
    spec: JobSpec
    checkpoints: CheckpointStore
    fade: bool = True
    last: Checkpoint | None = None  # the checkpoint of the sentence just yielded
    again: Callable[[Sentence], Checkpoint] | None = None  # makes a checkpoint that vanished (cache eviction)
    first: int = 0  # the sentences streamed: first up to (not including) end; None: to the end
    end: int | None = None

    def __iter__(self) -> Iterator[tuple[int, np.ndarray, int]]:
        """(sentence index, its float samples, the pause after it in samples)"""
        end = len(self.plan.sentences) if self.end is None else self.end
        for s in self.plan.sentences[self.first : end]:
            cp = self.checkpoints.load(self.plan.keys[s.index])
            if cp is None and self.again is not None:
                cp = self.again(s)
            if cp is None:
                raise CheckpointMissing(s.index)
            self.last = cp
            x = faded(cp.pcm) if self.fade else np.asarray(cp.pcm, dtype=np.float64) / SCALE
            yield s.index, x, self.plan.pause_after_ms(s.index, self.spec) * SAMPLE_RATE // 1000


class Loudness:
    """Integrated loudness and each sentence's true peak of a stream, fed sentence by sentence in
    reading order (`feed` takes what Sentences yields)."""

    def __init__(self) -> None:
        self.meter = LoudnessMeter(SAMPLE_RATE)
        self.peaks: dict[int, float] = {}

    def feed(self, index: int, x: np.ndarray, pause: int) -> None:
        before = self.meter.peak
        self.meter.peak = 0.0
        self.meter.feed(x)
        self.peaks[index] = self.meter.peak
        self.meter.peak = max(before, self.meter.peak)
        self.meter.feed(np.zeros(pause))

    def gain(self, target: float) -> float:
        """The stream's gain to `target` (LUFS)."""
        return gain_for(self.meter.integrated(), target)

    def gains(self, target: float, gain: float | None = None) -> dict[int, float]:
        """Each sentence's gain: one for the stream (`gain`, or the one to `target`), less for a sentence
        it would push over the true-peak ceiling."""
        g = self.gain(target) if gain is None else gain
        ceiling = 10 ** (TRUE_PEAK_CEILING_DB / 20)
        return {i: min(g, ceiling / p) if p > 0 else g for i, p in self.peaks.items()}


def sentence_gains(spec: JobSpec, stream: Sentences) -> dict[int, float] | None:
    """The gain of each sentence of the stream (by sentence index) for the spec's loudness
    target, or None (loudness off)."""
    if spec.loudness is None:
        return None
    loud = Loudness()
    for index, x, pause in stream:
        loud.feed(index, x, pause)
    return loud.gains(spec.loudness)


def render_segment(
    seg: Segment,
    stream: Sentences,
    gains: dict[int, float] | None,
    write: Callable[[np.ndarray], None],
    alive: Callable[[], bool] = lambda: True,
) -> None:
    """Write one segment's 16-bit samples (jobs/audio/segments.py): the silence before its first
    sentence, its sentences and pauses, the silence after its last sentence. `alive` is asked
    between sentences: False ends the rendering early."""
    if seg.lead:
        write(np.zeros(seg.lead, dtype="<i2"))
    for index, x, pause in stream:
        if not alive():
            return
        write(to_int16(x * gains[index]) if gains is not None else to_int16(x))
        gap = seg.tail if index == seg.last else pause
        if gap:
            write(np.zeros(gap, dtype="<i2"))


def to_int16(x: np.ndarray) -> np.ndarray:
    return cast(np.ndarray, np.round(np.clip(x, -1.0, 1.0) * SCALE).astype("<i2"))


def write_book(
    book: BookWriter, stream: Sentences, gains: dict[int, float] | None, on_sentence: Callable[[int], None]
) -> list[Cue]:
    """Write the stream into a BookWriter, marking chapters; returns one cue per sentence (chapter
    left None: see subtitles.with_chapters)."""
    plan = stream.plan
    cues = []
    for index, x, pause in stream:
        if index in plan.chapter_at:
            book.mark_chapter(plan.chapter_at[index])
        start = book.samples
        book.write_pcm(to_int16(x * gains[index]) if gains is not None else to_int16(x))
        cues.append(
            Cue(index, start, book.samples, None, plan.originals[index], plan.speaker(index), plan.paragraph_of(index))
        )  # as the document writes it
        if pause:
            book.write_pcm(np.zeros(pause, dtype="<i2"))
        on_sentence(index)
    return cues


def book_meta(doc: Document) -> BookMeta:
    """The document's own metadata (title, author, language, cover), if its reader gave any (EPUB, HTML)."""
    return doc.meta or BookMeta()


def tags_for(spec: JobSpec, doc_title: str | None, meta: BookMeta, cover: bytes | None) -> Tags:
    """The file's tags: the spec's (checked at submit), else the document's own (an EPUB's cover only
    if it is a JPEG or PNG of at most MAX_COVER_BYTES: the package can hold any bytes)."""
    title = spec.title or meta.title or doc_title
    own = meta.cover if meta.cover and len(meta.cover) <= MAX_COVER_BYTES and image_kind(meta.cover) else None
    series, part = series_parts(spec.series) if spec.series else (meta.series, meta.series_index)
    return Tags(
        title=clean_tag(title),
        album=clean_tag(title),
        author=clean_tag(spec.author or meta.author),
        narrator=clean_tag(spec.narrator),
        year=spec.year,
        cover=cover or own,
        series=clean_tag(series),
        series_part=part or None,
    )


def max_part_samples(spec: JobSpec) -> int | None:
    if spec.max_part_hours is None:
        return None
    return max(1, math.floor(spec.max_part_hours * 3600 * SAMPLE_RATE))
