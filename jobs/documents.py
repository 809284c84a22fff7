"""Documents: read and validate a text file, split it into paragraphs and sentences (sentencex)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from .errors import BadInput
from .inputs import read_input
from .settings import MAX_DOCUMENT_BYTES, MAX_SENTENCE_CHARS, MAX_SENTENCES

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\f\v]*\n")
_SPACES = re.compile(r"\s+")
_MD_PREFIX = re.compile(r"^(#{1,6}\s+|>\s*|[-*+]\s+)")
_HAS_WORD = re.compile(r"\w")
_MD_HEADING = re.compile(r"^#{1,6}\s+(.+)$")
_PLAIN_HEADING = re.compile(  # "Chapter 3", "CHAPTER IV. The Storm", "Part Two: Home", "Prologue"
    r"^((?i:chapter|part|book)\s+(\d+|[IVXLCDM]+|[A-Z][a-z]+)[.:]?|(?i:prologue|epilogue|interlude|afterword))"
    r"(\s[^.!?]{0,70})?[.!?]?$"
)
# Characters that are invisible or reorder text; they only confuse the tokenizer.
_INVISIBLE = dict.fromkeys(
    map(ord, "\u200b\u200c\u200d\u2060\ufeff\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u00ad"),
    None,
)


@dataclass(frozen=True)
class Document:
    """A document split for narration: paragraphs of sentences, in reading order, and chapters
    as (index of their first paragraph, title), from Markdown headings or "Chapter ..." lines."""

    title: str
    paragraphs: list[list[str]]
    chapters: list[tuple[int, str]] = field(default_factory=list)

    @property
    def sentences(self) -> list[str]:
        return [s for p in self.paragraphs for s in p]

    def to_json(self) -> dict:
        return {"title": self.title, "paragraphs": self.paragraphs, "chapters": self.chapters}

    @classmethod
    def from_json(cls, data: dict) -> Document:
        chapters = [(int(i), str(t)) for i, t in data.get("chapters", [])]
        return cls(title=data["title"], paragraphs=[list(p) for p in data["paragraphs"]], chapters=chapters)


def read_document(path: Path) -> Document:
    """Read, validate and split a UTF-8 text or Markdown file. Raises BadInput with a clear reason."""
    path = Path(path)
    raw = read_input(path, f"document {path}", MAX_DOCUMENT_BYTES, " (split it into parts)")
    return parse_document(raw, title=path.stem, origin=str(path))


def parse_document(raw: bytes, title: str, origin: str = "document") -> Document:
    if b"\x00" in raw:
        raise BadInput(f"{origin} contains NUL bytes: it looks binary, not UTF-8 text")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise BadInput(
            f"{origin} is not valid UTF-8 text (bad byte at offset {e.start}); convert it to UTF-8 first"
        ) from None
    paragraphs, chapters = split_document(text)
    if not paragraphs:
        raise BadInput(f"{origin} has no text to narrate (it is empty or only whitespace/punctuation)")
    n = sum(len(p) for p in paragraphs)
    if n > MAX_SENTENCES:
        raise BadInput(f"{origin} has {n} sentences; the limit is {MAX_SENTENCES} (split it into parts)")
    return Document(title=title, paragraphs=paragraphs, chapters=chapters)


def split_paragraphs(text: str) -> list[list[str]]:
    return split_document(text)[0]


def split_document(text: str) -> tuple[list[list[str]], list[tuple[int, str]]]:
    """Blank lines separate paragraphs; sentencex splits each paragraph into sentences. A
    paragraph that starts with a Markdown heading, or is one "Chapter ..." line, starts a chapter."""
    from sentencex import segment  # compiled extension, loaded only when splitting

    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = text.translate(_INVISIBLE)
    out: list[list[str]] = []
    chapters: list[tuple[int, str]] = []
    blocks: list[list[str]] = []
    for block in _PARAGRAPH_BREAK.split(text):
        raw_lines = [line.strip() for line in block.split("\n") if line.strip()]
        if len(raw_lines) > 1 and _MD_HEADING.match(raw_lines[0]):  # a heading is its own paragraph
            blocks += [raw_lines[:1], raw_lines[1:]]
        elif raw_lines:
            blocks.append(raw_lines)
    for raw_lines in blocks:
        heading = _MD_HEADING.match(raw_lines[0])
        if heading:
            title = heading.group(1).strip(" #")
        elif len(raw_lines) == 1 and _PLAIN_HEADING.match(raw_lines[0]):
            title = raw_lines[0]
        else:
            title = None
        lines = [_MD_PREFIX.sub("", line) for line in raw_lines]
        para = _SPACES.sub(" ", " ".join(line for line in lines if line)).strip()
        if not para:
            continue
        sentences = []
        for s in segment("en", para):
            s = s.strip()
            if _HAS_WORD.search(s):
                sentences.extend(_cap_length(s))
        if sentences:
            if title and _HAS_WORD.search(title):
                chapters.append((len(out), _SPACES.sub(" ", title)[:200]))
            out.append(sentences)
    return out, chapters


def _cap_length(sentence: str, limit: int = MAX_SENTENCE_CHARS) -> list[str]:
    """Split an over-long sentence at the last comma/semicolon or space before the limit."""
    parts = []
    while len(sentence) > limit:
        window = sentence[:limit]
        cut = max(window.rfind(", "), window.rfind("; "), window.rfind(": "))
        cut = cut + 1 if cut > limit // 3 else window.rfind(" ")
        if cut <= 0:
            cut = limit  # one unbroken run of characters: hard cut
        parts.append(sentence[:cut].strip())
        sentence = sentence[cut:].strip()
    if sentence:
        parts.append(sentence)
    return [p for p in parts if p]
