"""What a document would read, chapter by chapter, before anything is queued: titles, sentence
counts, estimated speaking time (jobs.documents.budgets' estimate, without the frame budget's margin) and
the first words."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from narrate.jobs.documents.budgets import speaking_seconds
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.selection import numbered_spans

FIRST_WORDS = 12


@dataclass(frozen=True)
class ChapterSummary:
    number: int  # in the whole book (with --chapters, the book's own number of a kept chapter)
    title: str
    sentences: int
    seconds: float
    first_words: str

    def to_json(self) -> dict:
        return asdict(self)


def summarize(doc: Document, pause_s: float = 0.0) -> list[ChapterSummary]:
    """One entry per chapter; text before the first chapter (or a book without chapters) is an
    opening named after the book, as in the output's chapter marks. `pause_s`: added per sentence."""
    out = []
    for number, first, end, title in numbered_spans(doc):
        sentences = [s for p in doc.paragraphs[first:end] for s in p]
        seconds = sum(speaking_seconds(s) + pause_s for s in sentences)
        words = " ".join(sentences[:3]).split()
        head = " ".join(words[:FIRST_WORDS]) + (" ..." if len(words) > FIRST_WORDS else "")
        out.append(ChapterSummary(number, title, len(sentences), round(seconds, 1), head))
    return out
