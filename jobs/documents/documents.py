"""Documents: read and validate a text file, split it into paragraphs and sentences (sentencex)."""

from __future__ import annotations

import base64
import itertools
import os
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from narrate.jobs.documents.cleaning import clean_text
from narrate.jobs.documents.encodings import decode_text
from narrate.jobs.documents.languages import DEFAULT as DEFAULT_LANGUAGE
from narrate.jobs.documents.languages import resolve_language
from narrate.jobs.documents.voicing import NARRATOR, Run, Voicing
from narrate.jobs.errors import BadInput
from narrate.jobs.inputs import read_input
from narrate.jobs.settings import MAX_DOCUMENT_BYTES, MAX_SENTENCE_CHARS, MAX_SENTENCES

# File name endings of the documents read_document is meant for (a watched folder takes these).
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\f\v]*\n")
_SPACES = re.compile(r"\s+")
_MD_PREFIX = re.compile(r"^(#{1,6}\s+|>\s*|[-*+]\s+)")
_HAS_WORD = re.compile(r"\w")
_MD_HEADING = re.compile(r"^#{1,6}\s+(.+)$")
_PLAIN_HEADING = re.compile(  # "Chapter 3", "CHAPTER IV. The Storm", "Part Two: Home", "Prologue"
    r"^((?i:chapter|part|book)\s+(\d+|[IVXLCDM]+|[A-Z][a-z]+)[.:]?|(?i:prologue|epilogue|interlude|afterword))"
    r"(\s[^.!?]{0,70})?[.!?]?$"
)
# Where an over-long sentence is best cut: after a clause mark (Latin ones followed by a space,
# CJK full-width ones as they are), else at a space, else anywhere but inside a letter's marks.
_CLAUSE_BREAK = re.compile(r"[,;:] |[，、；：。！？…]")


@dataclass(frozen=True)
class BookMeta:
    """What a book says about itself (EPUB/HTML metadata), for the output's tags: all optional."""

    title: str = ""
    author: str = ""
    language: str = ""
    cover: bytes = b""  # the cover image's bytes, as stored in the book
    cover_mime: str = ""  # e.g. image/jpeg
    # For a library's folder and metadata (jobs/library): empty when the book does not say.
    series: str = ""
    series_index: str = ""  # "2", "2.5"
    isbn: str = ""
    publisher: str = ""
    date: str = ""  # as the book gives it: "2003", "2003-04-29"
    description: str = ""  # plain text

    def to_json(self) -> dict:
        data = {"title": self.title, "author": self.author, "language": self.language, "cover_mime": self.cover_mime}
        extra = {k: getattr(self, k) for k in EXTRA_META if getattr(self, k)}  # none: the JSON (and id) as before
        return data | extra | {"cover": base64.b64encode(self.cover).decode()}

    @classmethod
    def from_json(cls, data: dict) -> BookMeta:
        text = {k: str(data.get(k, "")) for k in ("title", "author", "language", "cover_mime", *EXTRA_META)}
        return cls(cover=base64.b64decode(data.get("cover", "")), **text)


EXTRA_META = ("series", "series_index", "isbn", "publisher", "date", "description")


@dataclass(frozen=True)
class Document:
    """A document split for narration: paragraphs of sentences, in reading order, and chapters
    as (index of their first paragraph, title), from Markdown headings or "Chapter ..." lines."""

    title: str
    paragraphs: list[list[str]]
    chapters: list[tuple[int, str]] = field(default_factory=list)
    language: str = DEFAULT_LANGUAGE  # ISO 639-1 code (jobs.documents.languages): splitting, normalization, synthesis
    meta: BookMeta | None = None  # from the book's own metadata (EPUB, HTML, Markdown front matter); None for text
    # Each paragraph's own language where a passage is marked as another one (EPUB/HTML lang
    # attributes); empty when every paragraph is in the document's language.
    languages: list[str] = field(default_factory=list)
    # Each sentence's voice label, parallel to `paragraphs` ("narrator", a cast member "alice" or a
    # variant "alice:whisper"), where a cast gave any sentence a voice other than the narrator's; None:
    # every sentence is the narrator's (a document read without a cast), and to_json() leaves it out.
    voices: list[list[str]] | None = None
    # The book's own number of each chapter of `chapters` where `--chapters` kept only some
    # (jobs.documents.selection): chapter 3 stays 3; empty: the chapters are the book's, numbered 1, 2, ...
    chapter_numbers: list[int] = field(default_factory=list)
    # An EPUB kept as read, with the pages it was read from in reading order, for a read-along book
    # (jobs/readalong marks up those pages); empty unless asked for (ReadOptions.keep_source).
    source: bytes = b""
    source_pages: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.voices is not None and [len(v) for v in self.voices] != [len(p) for p in self.paragraphs]:
            raise BadInput("the document's voices do not match its sentences (one label per sentence)")
        if self.chapter_numbers and len(self.chapter_numbers) != len(self.chapters):
            raise BadInput("the document's chapter numbers do not match its chapters (one number per chapter)")

    @property
    def sentences(self) -> list[str]:
        return [s for p in self.paragraphs for s in p]

    @property
    def sentence_voices(self) -> list[str]:
        """The voice label of each sentence of `sentences`, in order ("narrator" without a cast)."""
        if self.voices is None:
            return [NARRATOR] * sum(len(p) for p in self.paragraphs)
        return [v for p in self.voices for v in p]

    def language_of(self, paragraph: int) -> str:
        return self.languages[paragraph] if self.languages else self.language

    def to_json(self) -> dict:
        data = {
            "title": self.title,
            "paragraphs": self.paragraphs,
            "chapters": self.chapters,
            "language": self.language,
        }
        data |= {"languages": self.languages} if self.languages else {}
        voices = {"voices": self.voices} if self.voices is not None else {}
        numbers = {"chapter_numbers": self.chapter_numbers} if self.chapter_numbers else {}
        source = base64.b64encode(self.source).decode()
        kept = {"source": source, "source_pages": self.source_pages} if self.source else {}
        return data | ({"meta": self.meta.to_json()} if self.meta else {}) | voices | numbers | kept

    @classmethod
    def from_json(cls, data: dict) -> Document:
        chapters = [(int(i), str(t)) for i, t in data.get("chapters", [])]
        language = str(data.get("language", DEFAULT_LANGUAGE))
        meta = BookMeta.from_json(data["meta"]) if data.get("meta") else None
        languages = [str(code) for code in data.get("languages", [])]
        voices = [[str(v) for v in p] for p in data["voices"]] if data.get("voices") is not None else None
        numbers = [int(n) for n in data.get("chapter_numbers", [])]
        source = base64.b64decode(data["source"]) if data.get("source") else b""
        pages = [str(p) for p in data.get("source_pages", [])]
        return cls(
            data["title"],
            [list(p) for p in data["paragraphs"]],
            chapters,
            language,
            meta,
            languages,
            voices,
            numbers,
            source,
            pages,
        )


def read_document(path: Path, language: str | None = None) -> Document:
    """Read, validate and split a UTF-8 text or Markdown file. Raises BadInput with a clear reason.
    `language`: a `--language` value (None or "auto": detected)."""
    path = Path(path)
    raw = read_input(path, f"document {path}", MAX_DOCUMENT_BYTES, " (split it into parts)")
    return parse_document(raw, title=title_from_name(path), origin=str(path), language=language)


def title_from_name(path: Path) -> str:
    """A book title from a file name, as text: bytes that are not UTF-8 (possible in Linux file
    names; they could not be stored or written as metadata) become U+FFFD, control characters go."""
    name = os.fsencode(path.stem).decode("utf-8", "replace")
    return _SPACES.sub(" ", clean_text(name)).strip()[:200] or "document"


def parse_document(
    raw: bytes,
    title: str,
    origin: str = "document",
    language: str | None = None,
    metadata_language: str | None = None,
    voicing: Voicing | None = None,
    meta: BookMeta | None = None,
) -> Document:
    """`language` as asked (None/"auto": `metadata_language`, e.g. an EPUB's, else detected).
    `voicing`: a cast's markup, importer or dialogue voice (jobs.cast), applied before splitting.
    `meta`: what the document says about itself (a Markdown file's front matter, taken out of `raw`)."""
    text = decode_text(raw, origin)
    if meta is not None:
        title, metadata_language = meta.title or title, meta.language or metadata_language
    if voicing is not None:
        text = voicing.prepare(text, origin)
    lang = resolve_language(language, text, metadata_language)
    voices: list[list[str]] | None = None
    if voicing is None:
        paragraphs, chapters = split_document(text, max_sentences=MAX_SENTENCES, language=lang)
    else:
        paragraphs, chapters, voices = split_voiced(text, voicing, origin, MAX_SENTENCES, lang)
    if not paragraphs:
        raise BadInput(f"{origin} has no text to narrate (it is empty or only whitespace/punctuation)")
    if sum(len(p) for p in paragraphs) > MAX_SENTENCES:
        raise BadInput(f"{origin} has more than {MAX_SENTENCES} sentences, the limit (split it into parts)")
    return Document(title=title, paragraphs=paragraphs, chapters=chapters, language=lang, voices=voices, meta=meta)


def split_paragraphs(text: str) -> list[list[str]]:
    return split_document(text)[0]


def split_document(
    text: str, max_sentences: int | None = None, language: str = DEFAULT_LANGUAGE
) -> tuple[list[list[str]], list[tuple[int, str]]]:
    """Blank lines separate paragraphs; sentencex splits each paragraph into sentences. A
    paragraph that starts with a Markdown heading, or is one "Chapter ..." line, starts a chapter.
    Splitting stops once there are more than `max_sentences` (millions of one-word paragraphs
    would otherwise take seconds and gigabytes to refuse)."""
    out: list[list[str]] = []
    chapters: list[tuple[int, str]] = []
    count = 0
    for title, para in _paragraph_texts(text):
        if max_sentences is not None and count > max_sentences:
            break
        sentences = sentences_of(para, language)
        if sentences:
            if title and _HAS_WORD.search(title):
                chapters.append((len(out), _SPACES.sub(" ", title)[:200]))
            out.append(sentences)
            count += len(sentences)
    return out, chapters


def split_voiced(
    text: str,
    voicing: Voicing,
    origin: str = "document",
    max_sentences: int | None = None,
    language: str = DEFAULT_LANGUAGE,
) -> tuple[list[list[str]], list[tuple[int, str]], list[list[str]] | None]:
    """split_document with a cast: paragraphs and chapters found as split_document finds them, then
    each paragraph's runs (`voicing.runs`: tags removed, a voice each) split into sentences, so a
    voice changes only between sentences. Also each sentence's voice label; None when all are the
    narrator's."""
    found = list(_paragraph_texts(text))
    runs = voicing.runs([para for _, para in found], origin)
    out: list[list[str]] = []
    labels: list[list[str]] = []
    chapters: list[tuple[int, str]] = []
    count = 0
    for (title, _), paragraph_runs in zip(found, runs, strict=True):
        if max_sentences is not None and count > max_sentences:
            break
        sentences, voices = voiced_sentences(paragraph_runs, language)
        if sentences:
            if title and _HAS_WORD.search(title):
                chapters.append((len(out), _SPACES.sub(" ", title)[:200]))
            out.append(sentences)
            labels.append(voices)
            count += len(sentences)
    return out, chapters, labels if any(v != NARRATOR for p in labels for v in p) else None


def voiced_sentences(runs: list[Run], language: str = DEFAULT_LANGUAGE) -> tuple[list[str], list[str]]:
    """One paragraph's runs split into sentences, and each sentence's voice label."""
    sentences: list[str] = []
    voices: list[str] = []
    for voice, text in runs:
        found = sentences_of(text, language)
        sentences += found
        voices += [voice] * len(found)
    return sentences, voices


def _paragraph_texts(text: str) -> Iterator[tuple[str | None, str]]:
    """Each paragraph's chapter title (None: it starts no chapter) and text on one line, in order."""
    for raw_lines in _blocks(clean_text(text)):
        heading = _MD_HEADING.match(raw_lines[0])
        if heading:
            title: str | None = heading.group(1).strip(" #")
        elif len(raw_lines) == 1 and _PLAIN_HEADING.match(raw_lines[0]):
            title = raw_lines[0]
        else:
            title = None
        lines = [_MD_PREFIX.sub("", line) for line in raw_lines]
        para = _SPACES.sub(" ", " ".join(line for line in lines if line)).strip()
        if para:
            yield title, para


def sentences_of(para: str, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """One paragraph's sentences (sentencex), each at most MAX_SENTENCE_CHARS, none without a word."""
    from sentencex import segment  # compiled extension, loaded only when splitting

    out = []
    for s in segment(language, para):
        s = s.strip()
        if _HAS_WORD.search(s):
            out.extend(_cap_length(s))
    return out


def _blocks(text: str) -> Iterator[list[str]]:
    """The non-empty stripped lines of each paragraph, one paragraph at a time; a Markdown
    heading is a paragraph of its own."""
    start = 0
    for end, after in itertools.chain(
        ((m.start(), m.end()) for m in _PARAGRAPH_BREAK.finditer(text)), [(len(text), 0)]
    ):
        raw_lines = [line.strip() for line in text[start:end].split("\n") if line.strip()]
        if len(raw_lines) > 1 and _MD_HEADING.match(raw_lines[0]):
            yield raw_lines[:1]
            yield raw_lines[1:]
        elif raw_lines:
            yield raw_lines
        start = after


def _cap_length(sentence: str, limit: int = MAX_SENTENCE_CHARS) -> list[str]:
    """Split an over-long sentence into parts of at most `limit` characters: after the last
    clause mark (", ", "; ", "，", "、", "。" ...) in the last two thirds of the window, else at its
    last space, else (CJK or Thai without either, or one unbroken run) anywhere that does not
    separate a letter from its combining marks. Linear in the sentence's length."""
    parts = []
    start, end = 0, len(sentence)
    while end - start > limit:
        window = sentence[start : start + limit]
        clause = max((m.end() for m in _CLAUSE_BREAK.finditer(window, limit // 3)), default=-1)
        cut = clause if clause > 0 else window.rfind(" ")
        if cut <= 0:
            cut = limit
            while cut > limit // 2 and unicodedata.category(sentence[start + cut])[0] == "M":
                cut -= 1
        parts.append(window[:cut].strip())
        start += cut
        while start < end and sentence[start].isspace():
            start += 1
    parts.append(sentence[start:].strip())
    return [p for p in parts if _HAS_WORD.search(p)]
