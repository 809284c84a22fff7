"""Where the book is cut, decided in reading order as sentences become available.

Two kinds of pieces, both cut only inside pauses:

- a *unit* is what is normalized as one (one loudness gain, jobs/audio/assemble.py): a chapter, or the
  part of a long chapter up to the first paragraph pause after SEGMENT_S of audio (any sentence
  pause after 1.5 x SEGMENT_S, for text without paragraphs);
- a *segment* is what one ffmpeg encodes (jobs/audio/segment_encoder.py): a unit, or the part of a unit
  up to the first sentence pause after BLOCK_S. Short, so that what is left after the last
  sentence spreads over every CPU.

A cut lies on a multiple of the codec's frame counted from the segment's start (its ``Grid``: the AAC frame,
1024 samples, for m4a/m4b; the MP3 frame, 576 samples at 24 kHz, for mp3), with at least CUT_SILENCE samples of
the pause after it and, for mp3, at least two frames of it before it: a segment ends with the pause's first part,
the next one starts with the rest. Then separately encoded segments join without a gap or click
(jobs/audio/adts.py, jobs/audio/mp3frames.py), and a gain changes only inside a pause. A pause too short to hold a
cut is never cut (the piece grows).

Only sample counts are needed to decide (the checkpoints' headers), so the cues, the chapter marks
and every segment's place in the book are known before any audio is rendered.

A redo's stitch (jobs/audio/reuse.py) follows the cuts of the book it redoes (``Cuts``): units and segments
start at the same sentences, and each segment with the silence it had before its first sentence; where the
sentences before a cut changed length, the pause at the cut grows by less than a frame, so every segment
whose own sentences did not change is the same audio as before (and its encoding can be kept)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from narrate.jobs.audio.subtitles import Cue
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.settings import SAMPLE_RATE

AAC_FRAME = 1024  # samples per AAC frame: every segment but the last lasts a multiple of it
MP3_FRAME = 576  # samples per MP3 frame at 24 kHz (MPEG-2 Layer III: one granule)
CUT_SILENCE = 2 * AAC_FRAME  # silence after a cut: the next segment's first frames are silent
MIN_CUT_PAUSE = CUT_SILENCE + AAC_FRAME  # a pause this long always holds an AAC cut (128 ms)


@dataclass(frozen=True)
class Grid:
    """Where a codec's segments may be cut: on a multiple of `frame`, with at least `head` samples of the pause
    before the cut (an mp3 segment's first frame stands for the encoder delay before it: jobs/audio/mp3frames.py)
    and CUT_SILENCE after it."""

    frame: int
    head: int = 0

    @property
    def min_pause(self) -> int:
        """A pause this long always holds a cut."""
        return self.head + self.frame + CUT_SILENCE


AAC = Grid(AAC_FRAME)
MP3 = Grid(MP3_FRAME, 2 * MP3_FRAME)


def grid_for(spec: JobSpec) -> Grid:
    """The grid of the book's format: an mp3 book's is MP3's, any other's AAC's (the streamed and WAV paths need
    none: they cut on it all the same)."""
    return MP3 if spec.output.lower().endswith(".mp3") else AAC


SEGMENT_S = 600  # audio in a loudness unit before a long chapter is cut at a paragraph pause
BLOCK_S = 90  # audio in an encoded segment before it is cut at a sentence pause


@dataclass(frozen=True)
class Segment:
    index: int
    unit: int  # the loudness unit it belongs to
    first: int  # first sentence
    last: int  # last sentence (inclusive)
    start: int  # book sample where it starts (the cut)
    lead: int  # silence before its first sentence (the end of the pause before it)
    tail: int  # silence after its last sentence (the beginning of the pause after it)
    samples: int  # its length: a multiple of its grid's frame unless it ends the book

    @property
    def end(self) -> int:
        return self.start + self.samples


@dataclass(frozen=True)
class Cuts:
    """The cuts of an earlier stitch of the same sentences: the first sentence of every unit and segment but
    the book's first, each segment's with its lead."""

    unit_starts: frozenset[int]
    leads: dict[int, int]


@dataclass
class Unit:
    index: int
    first: int
    last: int = -1  # set when it closes
    segments: list[Segment] = field(default_factory=list)


@dataclass
class Heard:
    """What a sentence's checkpoint header says (no samples read)."""

    samples: int
    frames: int
    runaway: bool
    takes: int


@dataclass
class Segmenter:
    """Call ``advance(lookup)`` whenever sentences may have become available: it walks the plan in
    reading order as far as `lookup` (sentence index -> Heard, or None: not yet) allows, timing cues
    and chapter marks, and returns the sentences it walked and the units it closed (with their
    segments)."""

    plan: Plan
    spec: JobSpec
    unit_samples: int = SEGMENT_S * SAMPLE_RATE
    block_samples: int = BLOCK_S * SAMPLE_RATE
    follow: Cuts | None = None  # a redo's: cut where the stitch it redoes did (see the module's doc)
    grid: Grid | None = None  # None: the book's format's (grid_for)
    next: int = 0  # the first sentence not walked yet
    cues: list[Cue] = field(default_factory=list)
    chapters: list[tuple[int, str]] = field(default_factory=list)  # (start sample, title)
    heard: list[Heard] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    _start: int = 0  # of the open segment
    _first: int = 0
    _lead: int = 0
    _filled: int = 0  # samples of the open segment so far
    _unit_filled: int = 0  # samples of the open unit before the open segment

    @property
    def done(self) -> bool:
        return self.next >= len(self.plan.sentences)

    @property
    def samples(self) -> int:
        return self.segments[-1].end if self.done and self.segments else self._start + self._filled

    def __post_init__(self) -> None:
        if self.grid is None:
            self.grid = grid_for(self.spec)

    @property
    def _grid(self) -> Grid:
        assert self.grid is not None
        return self.grid

    def pause(self, index: int) -> int:
        return self.plan.pause_after_ms(index, self.spec) * SAMPLE_RATE // 1000

    def advance(self, lookup: Callable[[int], Heard | None]) -> tuple[range, list[Unit]]:
        closed: list[Unit] = []
        n = len(self.plan.sentences)
        walked = self.next
        if not self.units and n:
            self.units.append(Unit(0, 0))
        while self.next < n:
            i = self.next
            got = lookup(i)
            if got is None:
                break
            self.heard.append(got)
            at = self._start + self._filled
            if i in self.plan.chapter_at:
                self.chapters.append((at, self.plan.chapter_at[i]))
            self.cues.append(
                Cue(
                    i,
                    at,
                    at + got.samples,
                    None,
                    self.plan.originals[i],
                    self.plan.speaker(i),
                    self.plan.paragraph_of(i),
                )
            )  # as written
            self._filled += got.samples
            self.next += 1
            pause = self.pause(i)
            if self.follow is not None:
                unit_end = i == n - 1 or i + 1 in self.follow.unit_starts
                cut = unit_end or i + 1 in self.follow.leads
            else:
                unit_end = i == n - 1 or self._unit_cut_after(i, pause)
                cut = unit_end or (pause >= self._grid.min_pause and self._filled >= self.block_samples)
            if i == n - 1:
                self._close(i, 0)
            elif cut:
                head, lead = self._cut(i + 1, pause)
                seg = self._close(i, head)
                self._unit_filled += seg.samples
                self._first, self._lead, self._filled = i + 1, lead, lead
            else:
                self._filled += pause
            if unit_end:
                unit = self.units[-1]
                unit.last = i
                closed.append(unit)
                self._unit_filled = 0
                if i < n - 1:
                    self.units.append(Unit(len(self.units), i + 1))
        return range(walked, self.next), closed

    def _cut(self, first: int, pause: int) -> tuple[int, int]:
        """(the silence that ends the open segment, the silence that opens the next one, starting at sentence
        `first`): the pause cut on the open segment's frame boundary, at least the grid's head into it; following
        a redone book's cuts, the next segment's lead is the one it had, and the pause grows by less than a frame if
        it must."""
        frame, least = self._grid.frame, self._grid.head
        head = -self._filled % frame
        if head < least:
            head += -(-(least - head) // frame) * frame
        lead = self.follow.leads.get(first) if self.follow is not None else None
        if lead is None or not CUT_SILENCE <= lead <= pause - least:
            return head, pause - head
        before = pause - lead
        return before + (-(self._filled + before) % frame), lead

    def _unit_cut_after(self, i: int, pause: int) -> bool:
        if pause < self._grid.min_pause:
            return False
        if i + 1 in self.plan.chapter_at:
            return True
        filled = self._unit_filled + self._filled
        if i in self.plan.paragraph_end:
            return filled >= self.unit_samples
        return filled >= self.unit_samples * 3 // 2

    def _close(self, last: int, tail: int) -> Segment:
        unit = self.units[-1]
        seg = Segment(
            len(self.segments), unit.index, self._first, last, self._start, self._lead, tail, self._filled + tail
        )
        self.segments.append(seg)
        unit.segments.append(seg)
        self._start = seg.end
        return seg


def cuts_at_chapters(plan: Plan, spec: JobSpec) -> bool:
    """Every chapter (after the first sentence) starts a segment: its pause holds a cut."""
    least = grid_for(spec).min_pause
    return all(i == 0 or plan.pause_after_ms(i - 1, spec) * SAMPLE_RATE // 1000 >= least for i in plan.chapter_at)
