"""Blocks of text from a structured document (EPUB, HTML, PDF) made into a Document: each
block a paragraph of sentences; a block may start a chapter."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from narrate.jobs.documents.cleaning import clean_text
from narrate.jobs.documents.documents import BookMeta, Document, sentences_of
from narrate.jobs.documents.languages import passage_language, resolve_language
from narrate.jobs.errors import BadInput
from narrate.jobs.settings import MAX_SENTENCES

_SPACES = re.compile(r"\s+")
_HAS_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Block:
    text: str
    heading: int = 0  # 1-6 for <h1>-<h6>, else 0
    chapter: str | None = None  # a chapter with this title starts here (at the next block with words)
    language: str | None = None  # a passage marked as being in a language (lang attribute), as written


def one_line(text: str) -> str:
    return _SPACES.sub(" ", clean_text(text)).strip()


def build_document(
    blocks: Iterable[Block],
    title: str,
    origin: str,
    meta: BookMeta | None = None,
    nothing: str = "",
    language: str | None = None,
) -> Document:
    """The Document of these blocks; BadInput if none has a word (`nothing` says what to do then)
    or there are more than MAX_SENTENCES sentences. `language`: a --language value (None/"auto":
    the book's metadata language, else detected from its text)."""
    blocks = list(blocks)
    sample = " ".join(b.text for b in blocks[:400])
    lang = resolve_language(language, sample, meta.language if meta else None)
    paragraphs: list[list[str]] = []
    languages: list[str] = []
    chapters: list[tuple[int, str]] = []
    pending: str | None = None
    count = 0
    for block in blocks:
        if block.chapter is not None and _HAS_WORD.search(block.chapter):
            pending = one_line(block.chapter)[:200]
        text = one_line(block.text)
        here = passage_language(block.language, lang)
        sentences = sentences_of(text, here) if _HAS_WORD.search(text) else []
        if not sentences:
            continue
        if pending:
            chapters.append((len(paragraphs), pending))
            pending = None
        paragraphs.append(sentences)
        languages.append(here)
        count += len(sentences)
        if count > MAX_SENTENCES:
            raise BadInput(f"{origin} has more than {MAX_SENTENCES} sentences, the limit (split it into parts)")
    if not paragraphs:
        raise BadInput(f"{origin} has no text to narrate{nothing}")
    mixed = languages if any(code != lang for code in languages) else []
    return Document(title=title, paragraphs=paragraphs, chapters=chapters, language=lang, meta=meta, languages=mixed)


def chapter_level(levels: list[int]) -> int:
    """The deepest heading level that still starts chapters: the shallowest level used more
    than once (a single <h1> is the page's title, its <h2>s the chapters), else the shallowest."""
    if not levels:
        return 0
    repeated = [lv for lv in set(levels) if levels.count(lv) > 1]
    return min(repeated) if repeated else min(levels)
