"""`--chapters 1-3,5`: only some chapters of a document are read, numbered as `narrate chapters`
lists them (text before the first chapter is chapter 1, the opening, named after the book)."""

from __future__ import annotations

import re
from dataclasses import replace

from narrate.jobs.documents.documents import Document
from narrate.jobs.errors import BadInput

MAX_CHAPTER = 100_000
_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def check_chapters(spec: str | None, option: str = "--chapters") -> tuple[int, ...]:
    """The chapter numbers of a `--chapters` value ("1-3,5"), sorted; () for none given (all of them)."""
    if spec is None or not spec.strip():
        return ()
    numbers: set[int] = set()
    for piece in spec.split(","):
        m = _RANGE.match(piece)
        if not m:
            raise BadInput(
                f"{option} {spec.strip()[:60]!r}: give chapter numbers and ranges, e.g. 1-3,5 "
                "(as `narrate chapters DOC` numbers them)"
            )
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        if first < 1 or last < first or last > MAX_CHAPTER:
            raise BadInput(f"{option} {piece.strip()!r}: a range runs from 1 up, its first number not above its last")
        numbers.update(range(first, last + 1))
    return tuple(sorted(numbers))


def spans(marks: list[tuple[int, str]], end: int, title: str) -> list[tuple[int, int, str]]:
    """Each chapter as (first, end, title) from its marks (first index, title) in order, up to `end`
    (paragraphs or sentences); what comes before the first mark is the opening, named `title`."""
    if not marks or marks[0][0] > 0:
        marks = [(0, title or "Opening"), *marks]
    ends = [i for i, _ in marks[1:]] + [end]
    return [(first, last, name) for (first, name), last in zip(marks, ends, strict=True)]


def chapter_spans(doc: Document) -> list[tuple[int, int, str]]:
    """Each chapter as (first paragraph, end paragraph, title), the opening included."""
    return spans(list(doc.chapters), len(doc.paragraphs), doc.title)


def numbered_spans(doc: Document) -> list[tuple[int, int, int, str]]:
    """`chapter_spans` with each chapter's number in the whole book: (number, first, end, title). A
    document of some chapters (`--chapters 1,3`) keeps the book's numbers: 1 and 3, not 1 and 2."""
    found = chapter_spans(doc)
    numbers = doc.chapter_numbers if len(doc.chapter_numbers) == len(found) else range(1, len(found) + 1)
    return [(n, *span) for n, span in zip(numbers, found, strict=True)]


def keep_chapters(doc: Document, numbers: tuple[int, ...], origin: str) -> Document:
    """The document with only chapters `numbers` (1-based), their titles kept as chapter marks."""
    if not numbers:
        return doc
    spans = chapter_spans(doc)
    if set(numbers) >= set(range(1, len(spans) + 1)):
        return doc  # every chapter: the document as it is
    beyond = [n for n in numbers if n > len(spans)]
    if beyond:
        raise BadInput(
            f"--chapters {beyond[0]}: document {origin} has {len(spans)} chapters (`narrate chapters` lists them)"
        )
    paragraphs: list[list[str]] = []
    chapters: list[tuple[int, str]] = []
    kept: list[int] = []
    for n in numbers:
        first, end, title = spans[n - 1]
        chapters.append((len(paragraphs), title))
        paragraphs += doc.paragraphs[first:end]
        kept += range(first, end)
    if not any(paragraphs):
        raise BadInput(f"--chapters {','.join(map(str, numbers))}: those chapters of {origin} have nothing to read")
    return replace(
        doc,
        paragraphs=paragraphs,
        chapters=chapters,
        languages=[doc.languages[i] for i in kept] if doc.languages else [],
        voices=[doc.voices[i] for i in kept] if doc.voices is not None else None,
        chapter_numbers=list(numbers),  # the book's own: chapter 3 stays 3
    )
