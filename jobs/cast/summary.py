"""What a cast would read, before anything is queued (`narrate cast`, and the line `submit` prints):
sentences and estimated seconds per voice (jobs.documents.budgets' estimate), the first lines of
each, the declared voices no sentence uses and the tags that name nobody."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from narrate.jobs.cast.declare import Cast
from narrate.jobs.cast.reading import CastReport
from narrate.jobs.counts import count
from narrate.jobs.documents.budgets import speaking_seconds
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.voicing import NARRATOR
from narrate.jobs.humanize import clock

FIRST_LINES = 3
LINE_CHARS = 100


@dataclass(frozen=True)
class VoiceSummary:
    """One voice of the cast in one document. `voice`: its voice argument (the narrator's may be
    None: the job's own --voice)."""

    label: str
    voice: str | None
    sentences: int
    seconds: float
    first_lines: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "voice": self.voice,
            "sentences": self.sentences,
            "seconds": self.seconds,
            "first_lines": list(self.first_lines),
        }


@dataclass(frozen=True)
class CastSummary:
    """The voices that speak (the narrator first, then by first sentence), the declared ones that
    never do, and the tags that name nobody (as written -> times)."""

    voices: tuple[VoiceSummary, ...]
    unused: tuple[str, ...] = ()
    unknown: dict[str, int] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.voices, self.unused, tuple(self.unknown.items())))

    @property
    def sentences(self) -> int:
        return sum(v.sentences for v in self.voices)

    @property
    def seconds(self) -> float:
        return round(sum(v.seconds for v in self.voices), 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "sentences": self.sentences,
            "seconds": self.seconds,
            "voices": [v.to_json() for v in self.voices],
            "unused": list(self.unused),
            "unknown_tags": self.unknown,
        }

    def one_line(self) -> str:
        """`cast: narrator 80 sentences (0:08:00), alice 30 (0:03:10); never used: carol; tags that name
        nobody (read as text): [Fireball] (3 times)`."""
        spoken = [
            f"{v.label} {count(v.sentences, 'sentence')} ({clock(v.seconds)})"
            if n == 0
            else f"{v.label} {v.sentences} ({clock(v.seconds)})"
            for n, v in enumerate(self.voices)
        ]
        parts = [f"cast: {', '.join(spoken) or 'no sentences'}"]
        if self.unused:
            parts.append(f"never used: {', '.join(self.unused)}")
        if self.unknown:
            parts.append(f"tags that name nobody (read as text): {CastReport(self.unknown).describe()}")
        return "; ".join(parts)


def summarize_cast(doc: Document, cast: Cast, report: CastReport | None = None, pause_s: float = 0.0) -> CastSummary:
    """The summary of `doc` as read with `cast` (jobs.cast.reading.read_cast gives both the
    document and the report). `pause_s`: added per sentence to the estimate."""
    counts: dict[str, list[float]] = {}
    lines: dict[str, list[str]] = {}
    for sentence, label in zip(doc.sentences, doc.sentence_voices, strict=True):
        tally = counts.setdefault(label, [0, 0.0])
        tally[0] += 1
        tally[1] += speaking_seconds(sentence) + pause_s
        shown = lines.setdefault(label, [])
        if len(shown) < FIRST_LINES:
            shown.append(sentence if len(sentence) <= LINE_CHARS else sentence[: LINE_CHARS - 3] + "...")
    order = sorted(counts, key=lambda label: label != NARRATOR)  # stable: first use after the narrator
    voices = tuple(
        VoiceSummary(label, _voice(cast, label), int(counts[label][0]), round(counts[label][1], 1), tuple(lines[label]))
        for label in order
    )
    unused = tuple(label for label in cast.voices if label not in counts)
    return CastSummary(voices, unused, dict(report.unknown) if report else {})


def cast_line(doc: Document, cast: Cast, report: CastReport | None = None, pause_s: float = 0.0) -> str:
    """The summary in one line, for `submit` to print."""
    return summarize_cast(doc, cast, report, pause_s).one_line()


def _voice(cast: Cast, label: str) -> str | None:
    return cast.narrator if label == NARRATOR else cast.voices.get(label)
