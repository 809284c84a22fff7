"""The times a read-along book is made of: each sentence's clip in the book's audio (from the cues
the stitcher timed, exact to the sample) and, where a recognizer gave them, its words' times.

Word timings come per sentence as (word, start, end), in seconds from the start of the sentence's
own audio (its take: what the recognizer heard), in the order spoken; `placed` puts them on the
book's clock. A word's clip in a media overlay runs from its start to the next word's start (the
first from the sentence's start, the last to its end), so a reading system that plays clip after
clip skips none of the sentence's audio."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from narrate.jobs.audio.subtitles import Cue

Word = tuple[str, float, float]  # (word as written, start, end): seconds from the sentence's start


@dataclass(frozen=True)
class Clip:
    index: int  # the sentence's index in the plan
    start: float  # seconds of the book
    end: float
    chapter: int | None = None

    @property
    def duration(self) -> float:
        return self.end - self.start


def clips_of(cues: Sequence[Cue], rate: int) -> list[Clip]:
    return [Clip(c.index, c.start / rate, c.end / rate, c.chapter) for c in cues]


def placed(clip: Clip, words: Sequence[Word]) -> list[Word]:
    """The words on the book's clock, kept inside the sentence's clip and in order (a recognizer's
    times may run a little past the take's edges, or overlap)."""
    out: list[Word] = []
    floor = clip.start
    for text, start, end in words:
        a = min(max(clip.start + start, floor), clip.end)
        b = min(max(clip.start + end, a), clip.end)
        out.append((text, a, b))
        floor = a
    return out


def word_clips(clip: Clip, words: Sequence[Word]) -> list[tuple[float, float]]:
    """Each word's clip on the book's clock (words as `placed` gives them): from its start to the
    next one's, the first from the sentence's start, the last to its end."""
    starts = [clip.start] + [w[1] for w in words[1:]]
    ends = starts[1:] + [clip.end]
    return list(zip(starts, ends, strict=True))
