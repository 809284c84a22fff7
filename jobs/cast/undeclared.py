"""Brackets that look like a cast tag (`[alice]`, `[Mr. Darcy]`) but name no declared voice: they are
read aloud as text, as any bracket that names nobody is, and `submit` and `run` say so on stderr,
one warning per tag naming where it first appears (a text file's line; else the paragraph's first
words) and how to declare it (docs/cast.md), so a forgotten `--voice NAME=...` is not heard for the
first time in the audio."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from narrate.jobs.cast.declare import LABEL
from narrate.jobs.cast.markup import TAG, looks_like_tag
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.encodings import decode_text
from narrate.jobs.errors import NarrateError, printable

SHOWN = 5  # warnings per document; the rest are counted in the last one
SNIPPET_WORDS = 8


def tags_in(doc: Document) -> Counter[str]:
    """The tag-like brackets of a document read without a cast (its text keeps them) -> times seen."""
    found: Counter[str] = Counter()
    for paragraph in doc.paragraphs:
        for sentence in paragraph:
            found.update(m.group(0) for m in TAG.finditer(sentence) if m.group(1) and looks_like_tag(m.group(1)))
    return found


def warnings(path: Path, doc: Document, unknown: dict[str, int] | Counter[str], cast: bool) -> list[str]:
    """One line per tag of `unknown` (as written -> times seen) of document `path`: where it is, that
    it is read as text, and how to make it a voice. `cast`: the document was read with a cast."""
    if not unknown:
        return []
    lines = _lines(path)
    out = []
    for tag, times in list(unknown.items())[:SHOWN]:
        where = _line_of(lines, tag) if lines is not None else None
        at = f"line {where}" if where is not None else f"at {_snippet(doc, tag)!r}"
        inner = tag[1:-1].strip()
        declare = (
            f"--voice {inner.lower()}=VOICE"
            if LABEL.fullmatch(inner.lower())
            else f'an alias in a cast.toml ([aliases] "{inner}" = "NAME")'
        )
        whom = "no voice of the cast" if cast else "no voice (the book has no cast)"
        again = f" ({times} times)" if times > 1 else ""
        out.append(
            f"{path.name} {at}: {tag}{again} names {whom}, so it is read aloud as text; to make it a voice, "
            f"declare it ({declare}; see docs/cast.md), or write \\{tag} to keep it as text"
        )
    more = len(unknown) - SHOWN
    if more > 0:
        out.append(f"{path.name}: {more} more tag-like brackets name no voice (narrate cast {path.name} lists them)")
    return [printable(line) for line in out]


def _lines(path: Path) -> list[str] | None:
    """A text or Markdown file's lines (None for other formats, or a file that cannot be read again)."""
    if path.suffix.lower() not in (".txt", ".md", ".markdown", ".text", ""):
        return None
    try:
        return decode_text(path.read_bytes(), str(path)).splitlines()
    except (OSError, NarrateError):
        return None


def _line_of(lines: list[str], tag: str) -> int | None:
    """The number (1-based) of the first line holding `tag` (any spacing inside the brackets)."""
    inner = " ".join(tag[1:-1].split()).lower()
    for n, line in enumerate(lines, 1):
        for m in TAG.finditer(line):
            if m.group(1) and " ".join(m.group(1).split()).lower() == inner:
                return n
    return None


def _snippet(doc: Document, tag: str) -> str:
    for paragraph in doc.paragraphs:
        text = " ".join(paragraph)
        if tag in text:
            words = text.split()
            return " ".join(words[:SNIPPET_WORDS]) + (" ..." if len(words) > SNIPPET_WORDS else "")
    return tag
