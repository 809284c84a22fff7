"""Reading a document in any format narrate takes: plain text, Markdown, EPUB, HTML, PDF. The
format follows the file's extension unless one is named (`--input-format`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from narrate.jobs.documents.documents import Document, parse_document, title_from_name
from narrate.jobs.documents.encodings import decode_text
from narrate.jobs.documents.selection import keep_chapters
from narrate.jobs.documents.voicing import Voicing
from narrate.jobs.errors import BadInput
from narrate.jobs.inputs import read_input
from narrate.jobs.settings import MAX_DOCUMENT_BYTES

INPUT_FORMATS = ("txt", "md", "epub", "html", "pdf")
_BY_SUFFIX = {
    ".txt": "txt",
    ".text": "txt",
    ".md": "md",
    ".markdown": "md",
    ".epub": "epub",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
}
SUFFIXES = tuple(_BY_SUFFIX)


@dataclass(frozen=True)
class ReadOptions:
    input_format: str | None = None  # one of INPUT_FORMATS; None: by the file's extension
    include_front_matter: bool = False  # EPUB: keep cover, contents and copyright pages
    language: str | None = None  # a --language value; None/"auto": the book's metadata, else detected
    # A cast's markup, importer or dialogue voice (jobs.cast.reading.CastReading): each sentence gets a
    # voice label (Document.voices). None: read as without a cast, exactly.
    voicing: Voicing | None = None
    chapters: tuple[int, ...] = ()  # `--chapters`: only these (1-based, as `narrate chapters` numbers them); (): all
    keep_source: bool = False  # EPUB: the Document keeps the file itself (`--readalong epub` marks up its pages)


DEFAULT_READING = ReadOptions()


def check_input_format(named: str) -> str:
    """An `--input-format` value, lower-cased; BadInput for a format no reader reads."""
    if named.lower() not in INPUT_FORMATS:
        raise BadInput(f"unknown input format {named!r}: use one of {', '.join(INPUT_FORMATS)}")
    return named.lower()


def format_of(path: Path, named: str | None = None) -> str:
    """The format to read `path` as: the one named, else its extension's; text when unknown."""
    if named:
        return check_input_format(named)
    return _BY_SUFFIX.get(Path(path).suffix.lower(), "txt")


def read_any(path: Path, options: ReadOptions = DEFAULT_READING) -> Document:
    """Read and validate a document in its format (raises BadInput with a one-line reason)."""
    path = Path(path)
    raw = read_input(path, f"document {path}", MAX_DOCUMENT_BYTES, " (split it into parts)")
    return parse_bytes(raw, format_of(path, options.input_format), title_from_name(path), str(path), options)


def parse_bytes(raw: bytes, fmt: str, title: str, origin: str, options: ReadOptions = DEFAULT_READING) -> Document:
    """The document in `raw`, read as `fmt`. Whatever a reader or the library under it raises (a
    charset Python does not know, an encryption pypdf cannot open, a broken structure) is a
    BadInput naming the document: one bad file is refused alone, never a traceback."""
    try:
        doc = _parse(raw, fmt, title, origin, options)
        return keep_chapters(doc, tuple(options.chapters), origin) if options.chapters else doc
    except BadInput:
        raise
    except (MemoryError, RecursionError) as e:
        why = type(e).__name__
        raise BadInput(f"document {origin} is too large or too deeply nested to read as {fmt} ({why})") from None
    except Exception as e:  # noqa: BLE001 - any library error is this document's problem
        reason = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        raise BadInput(f"document {origin} cannot be read as {fmt}: {reason} ({type(e).__name__})") from None


def _parse(raw: bytes, fmt: str, title: str, origin: str, options: ReadOptions) -> Document:
    voicing = options.voicing
    if voicing is not None:
        voicing.check(fmt, origin)
    if fmt == "epub":
        from narrate.jobs.documents.readers.epub import parse_epub

        front = options.include_front_matter
        return parse_epub(raw, origin, title, MAX_DOCUMENT_BYTES, front, options.language, voicing, options.keep_source)
    if fmt == "html":
        from narrate.jobs.documents.readers.html import parse_html_document

        return parse_html_document(raw, origin, title, options.language, voicing)
    if fmt == "pdf":
        from narrate.jobs.documents.readers.pdf import parse_pdf

        return parse_pdf(raw, origin, title, options.language, voicing)
    meta = None
    if fmt == "md":  # front matter is metadata, not text
        from narrate.jobs.documents.readers.frontmatter import split_front_matter

        meta, text = split_front_matter(decode_text(raw, origin))
        raw = text.encode() if meta is not None else raw
    return parse_document(raw, title=title, origin=origin, language=options.language, voicing=voicing, meta=meta)
