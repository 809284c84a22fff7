"""Blocks of text from a structured document (EPUB, HTML, PDF) made into a Document: each
block a paragraph of sentences; a block may start a chapter."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from narrate.jobs.documents.cleaning import clean_text
from narrate.jobs.documents.documents import BookMeta, Document, sentences_of, voiced_sentences
from narrate.jobs.documents.languages import passage_language, resolve_language
from narrate.jobs.documents.voicing import NARRATOR, Voicing
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
    voicing: Voicing | None = None,
) -> Document:
    """The Document of these blocks; BadInput if none has a word (`nothing` says what to do then)
    or there are more than MAX_SENTENCES sentences. `language`: a --language value (None/"auto":
    the book's metadata language, else detected from its text). `voicing`: a cast's markup or
    dialogue voice (jobs.cast), given every block's text before it is split into sentences."""
    blocks = list(blocks)
    sample = " ".join(b.text for b in blocks[:400])
    lang = resolve_language(language, sample, meta.language if meta else None)
    texts = [one_line(b.text) for b in blocks]
    runs = voicing.runs(texts, origin) if voicing is not None else None
    paragraphs: list[list[str]] = []
    languages: list[str] = []
    labels: list[list[str]] = []
    chapters: list[tuple[int, str]] = []
    pending: str | None = None
    count = 0
    for i, (block, text) in enumerate(zip(blocks, texts, strict=True)):
        if block.chapter is not None and _HAS_WORD.search(block.chapter):
            pending = one_line(block.chapter)[:200]
        here = passage_language(block.language, lang)
        if runs is not None:
            sentences, voices = voiced_sentences(runs[i], here)
        else:
            sentences, voices = (sentences_of(text, here) if _HAS_WORD.search(text) else []), []
        if not sentences:
            continue
        if pending:
            chapters.append((len(paragraphs), pending))
            pending = None
        paragraphs.append(sentences)
        languages.append(here)
        labels.append(voices)
        count += len(sentences)
        if count > MAX_SENTENCES:
            raise BadInput(f"{origin} has more than {MAX_SENTENCES} sentences, the limit (split it into parts)")
    if not paragraphs:
        raise BadInput(f"{origin} has no text to narrate{nothing}")
    mixed = languages if any(code != lang for code in languages) else []
    voiced = labels if any(v != NARRATOR for p in labels for v in p) else None
    return Document(title, paragraphs, chapters, lang, meta, mixed, voiced)


def chapter_level(levels: list[int]) -> int:
    """The deepest heading level that still starts chapters: the shallowest level used more
    than once (a single <h1> is the page's title, its <h2>s the chapters), else the shallowest."""
    if not levels:
        return 0
    repeated = [lv for lv in set(levels) if levels.count(lv) > 1]
    return min(repeated) if repeated else min(levels)
