"""Where the book is cut into segments, decided in reading order as sentences become available.

A segment is the unit that is normalized (one loudness gain, jobs/assemble.py) and encoded on
its own (jobs/segment_encoder.py) while synthesis continues. A cut is made before every chapter
and, inside a long chapter, at the first paragraph pause after SEGMENT_S of audio (at any
sentence pause after 1.5 x SEGMENT_S, for text without paragraphs). A cut always lies inside a
pause, on a multiple of the AAC frame (1024 samples) counted from the segment's start, with at
least CUT_SILENCE samples of the pause after it: the segment ends with the pause's first part, the
next one starts with the rest. Then the separately encoded segments join without a gap or click
(jobs/adts.py), and a gain changes only inside a pause. A pause too short to hold a cut is never
cut (the segment grows).

Only sample counts are needed to decide (the checkpoints' headers), so the cues, the chapter marks
and every segment's place in the book are known before any audio is rendered."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .plan import Plan
from .settings import SAMPLE_RATE
from .spec import JobSpec
from .subtitles import Cue

AAC_FRAME = 1024  # samples per AAC frame: every segment but the last lasts a multiple of it
CUT_SILENCE = 2 * AAC_FRAME  # silence after a cut: the next segment's first frames are silent
MIN_CUT_PAUSE = CUT_SILENCE + AAC_FRAME  # a pause this long always holds a cut
SEGMENT_S = 600  # audio in a segment before a long chapter is cut at a paragraph pause


@dataclass(frozen=True)
class Segment:
    index: int
    first: int  # first sentence
    last: int  # last sentence (inclusive)
    start: int  # book sample where it starts (the cut)
    lead: int  # silence before its first sentence (the end of the pause before it)
    tail: int  # silence after its last sentence (the beginning of the pause after it)
    samples: int  # its length: a multiple of AAC_FRAME unless it ends the book

    @property
    def end(self) -> int:
        return self.start + self.samples


@dataclass
class Heard:
    """What a sentence's checkpoint header says (no samples read)."""

    samples: int
    frames: int
    runaway: bool
    takes: int


@dataclass
class Segmenter:
    """Feed it ``advance(lookup)`` whenever sentences may have become available: it walks the
    plan in reading order as far as `lookup` (sentence index -> Heard, or None: not yet) allows,
    timing cues and chapter marks and closing segments, and returns the segments it closed."""

    plan: Plan
    spec: JobSpec
    segment_samples: int = SEGMENT_S * SAMPLE_RATE
    next: int = 0  # the first sentence not walked yet
    cues: list[Cue] = field(default_factory=list)
    chapters: list[tuple[int, str]] = field(default_factory=list)  # (start sample, title)
    heard: list[Heard] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    _start: int = 0  # of the open segment
    _first: int = 0
    _lead: int = 0
    _filled: int = 0  # samples of the open segment so far

    @property
    def done(self) -> bool:
        return self.next >= len(self.plan.sentences)

    @property
    def samples(self) -> int:
        return self.segments[-1].end if self.done and self.segments else self._start + self._filled

    def pause(self, index: int) -> int:
        return self.plan.pause_after_ms(index, self.spec) * SAMPLE_RATE // 1000

    def advance(self, lookup: Callable[[int], Heard | None]) -> list[Segment]:
        closed: list[Segment] = []
        n = len(self.plan.sentences)
        while self.next < n:
            i = self.next
            got = lookup(i)
            if got is None:
                break
            self.heard.append(got)
            at = self._start + self._filled
            if i in self.plan.chapter_at:
                self.chapters.append((at, self.plan.chapter_at[i]))
            self.cues.append(Cue(i, at, at + got.samples, None, self.plan.sentences[i].text))
            self._filled += got.samples
            self.next += 1
            pause = self.pause(i)
            if i == n - 1:
                closed.append(self._close(i, 0))
            elif self._cut_after(i, pause):
                head = -self._filled % AAC_FRAME
                closed.append(self._close(i, head))
                self._first, self._lead, self._filled = i + 1, pause - head, pause - head
            else:
                self._filled += pause
        return closed

    def _cut_after(self, i: int, pause: int) -> bool:
        if pause < MIN_CUT_PAUSE:
            return False
        if i + 1 in self.plan.chapter_at:
            return True
        if i in self.plan.paragraph_end:
            return self._filled >= self.segment_samples
        return self._filled >= self.segment_samples * 3 // 2

    def _close(self, last: int, tail: int) -> Segment:
        seg = Segment(len(self.segments), self._first, last, self._start, self._lead, tail, self._filled + tail)
        self.segments.append(seg)
        self._start = seg.end
        return seg


def cuts_at_chapters(plan: Plan, spec: JobSpec) -> bool:
    """Every chapter (after the first sentence) starts a segment: its pause holds a cut."""
    return all(i == 0 or plan.pause_after_ms(i - 1, spec) * SAMPLE_RATE // 1000 >= MIN_CUT_PAUSE
               for i in plan.chapter_at)  # fmt: skip
