"""EPUB 2 and 3 through ebooklib: spine order, chapter titles from the navigation document or
the NCX (else the first heading), front and back matter that is not reading text skipped,
title, author, language and cover from the package metadata."""

from __future__ import annotations

import html
import io
import posixpath
import re
import warnings
from collections.abc import Iterable
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

import ebooklib
from ebooklib import epub
from lxml import etree
from narrate.jobs.documents.documents import BookMeta, Document
from narrate.jobs.documents.readers.blocks import Block, build_document, one_line
from narrate.jobs.documents.readers.epub_clean import clean_epub
from narrate.jobs.documents.readers.epub_zip import check_epub_zip
from narrate.jobs.documents.readers.xhtml import Page, page_of, parse_html
from narrate.jobs.documents.voicing import Voicing
from narrate.jobs.errors import BadInput

# epub:type / landmark / guide types of pages that are not reading text.
SKIP_TYPES = frozenset(
    "cover toc copyright-page colophon index loi lot landmarks page-list imprint imprimatur "
    "footnotes endnotes rearnotes".split()
)
_SKIP_NAMES = re.compile(r"(^|[^a-z])(cover|copyright|toc|contents|colophon|index)([^a-z]|$)", re.IGNORECASE)
_SKIP_TITLES = re.compile(r"^\s*(cover|copyright|(table of )?contents|colophon|index)\s*$", re.IGNORECASE)
_COPYRIGHT = re.compile(r"©|\(c\)\s*\d{4}|all rights reserved|\bISBN\b", re.IGNORECASE)


def parse_epub(
    raw: bytes,
    origin: str,
    fallback_title: str,
    max_bytes: int,
    include_front_matter: bool,
    language: str | None = None,
    voicing: Voicing | None = None,
    keep_source: bool = False,
) -> Document:
    """`keep_source`: the Document keeps the file and the names of the pages read (a read-along book's)."""
    check_epub_zip(raw, origin, max_bytes)
    try:  # what the package lists, nothing that runs or loads from elsewhere: read as a read-along book keeps it
        raw = clean_epub(raw)
    except BadInput as e:  # a page that cannot be read whole
        raise BadInput(f"{origin}: {e}") from None
    except (ValueError, etree.LxmlError) as e:
        raise BadInput(f"{origin} is not a valid EPUB ({str(e).splitlines()[0]}); export it again") from None
    source = raw if keep_source else b""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            book = epub.read_epub(io.BytesIO(raw), {"ignore_ncx": True})
    except (epub.EpubException, KeyError, ValueError, AttributeError, IndexError, TypeError, etree.LxmlError) as e:
        why = str(getattr(e, "msg", None) or e).strip().splitlines()[:1] or [type(e).__name__]
        if why[0] == "Can not find container file":  # ebooklib's words for a missing package document
            why = ["the package document (.opf) that container.xml names is missing"]
        raise BadInput(f"{origin} is not a valid EPUB ({why[0]}); export it again") from None
    meta = _meta(book)
    titles, anchors = _toc(book.toc)
    skip_files = _landmarks(book) if not include_front_matter else set()
    blocks: list[Block] = []
    pages: list[str] = []
    for idref, linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() not in (ebooklib.ITEM_DOCUMENT, ebooklib.ITEM_NAVIGATION):
            continue
        name = posixpath.normpath(item.get_name())
        if not include_front_matter and (isinstance(item, epub.EpubNav) or linear == "no" or name in skip_files):
            continue
        inner = anchors.get(name, {})
        raw, encoding = _page_bytes(item)
        page = page_of(parse_html(raw, f"{origin}: {name}", encoding), anchors=inner)
        found_inner = any(b.chapter for b in page.blocks)
        title = titles.get(name) or (None if found_inner else next(iter(inner.values()), None))
        if not include_front_matter and _not_reading_text(page, name, title):
            continue
        pages.append(name)
        if title or (not found_inner and page.first_heading()):
            blocks.append(Block("", chapter=title or page.first_heading()))
        blocks.extend(page.blocks)
    doc = build_document(
        blocks,
        meta.title or fallback_title,
        origin,
        meta,
        " (all of it is cover, contents or copyright pages, or images)",
        language,
        voicing,
    )
    return replace(doc, source=source, source_pages=pages) if keep_source else doc


def _meta(book: epub.EpubBook) -> BookMeta:
    def first(name: str) -> str:
        values = [one_line(v) for v, _ in book.get_metadata("DC", name) if v and one_line(v)]
        return values[0][:200] if values else ""

    authors = [one_line(v) for v, _ in book.get_metadata("DC", "creator") if v and one_line(v)]
    cover = next((i for i in book.get_items() if isinstance(i, epub.EpubCover)), None)
    if cover is None:  # EPUB 2: <meta name="cover" content="ID">
        ids = [attrs.get("content") for _, attrs in book.get_metadata("OPF", "cover") if attrs]
        cover = next((book.get_item_with_id(i) for i in ids if i and book.get_item_with_id(i) is not None), None)
    data, mime = b"", ""
    if cover is not None and (cover.media_type or "").startswith("image/"):
        data, mime = cover.get_content(), cover.media_type
    series, index = _series(book)
    description = one_line(re.sub(r"<[^>]+>", " ", html.unescape(_first_raw(book, "description"))))[:4000]
    return BookMeta(
        first("title"),
        ", ".join(authors)[:200],
        first("language"),
        data,
        mime,
        series=series,
        series_index=index,
        isbn=_isbn(book),
        publisher=first("publisher"),
        date=first("date")[:10],
        description=description,
    )


def _first_raw(book: epub.EpubBook, name: str) -> str:
    return next((str(v) for v, _ in book.get_metadata("DC", name) if v), "")


_ISBN = re.compile(r"^(?:urn:isbn:|isbn:?\s*)?([0-9][0-9-]{8,16}[0-9xX])$", re.IGNORECASE)


def _isbn(book: epub.EpubBook) -> str:
    """An ISBN among the identifiers: one marked opf:scheme="ISBN", or a urn:isbn:, or 10/13 digits."""
    for value, attrs in book.get_metadata("DC", "identifier"):
        m = _ISBN.match(str(value or "").strip())
        marked = any(str(v).upper() == "ISBN" for k, v in (attrs or {}).items() if k.endswith("scheme"))
        digits = m.group(1).replace("-", "") if m else ""
        if m and (marked or len(digits) in (10, 13)):
            return digits.upper()
    return ""


def _series(book: epub.EpubBook) -> tuple[str, str]:
    """(series, index): calibre's <meta name="calibre:series"> (EPUB 2), else EPUB 3's
    belongs-to-collection with its group-position."""
    metas = [(str(v or ""), attrs or {}) for v, attrs in book.get_metadata("OPF", "meta")]
    named = {a.get("name"): str(a.get("content") or "") for _, a in metas if a.get("name")}
    if named.get("calibre:series"):
        return one_line(named["calibre:series"])[:200], _index(named.get("calibre:series_index", ""))
    for value, attrs in metas:
        if attrs.get("property") == "belongs-to-collection" and value.strip():
            ref = f"#{attrs.get('id', '')}"
            position = next(
                (v for v, a in metas if a.get("refines") == ref and a.get("property") == "group-position"), ""
            )
            return one_line(value)[:200], _index(position)
    return "", ""


def _index(raw: str) -> str:
    """A series position as people write it: 2, 2.5 (calibre writes 2.0)."""
    try:
        number = float(raw)
    except ValueError:
        return ""
    return str(int(number)) if number.is_integer() else f"{number:g}"


def _toc(toc: Iterable[Any] | None) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """From the TOC (every level): file -> title of the entry that points at the file itself, and
    file -> {element id -> title} for entries that point inside a file (a chapter starts there)."""
    titles: dict[str, str] = {}
    anchors: dict[str, dict[str, str]] = {}

    def visit(entries: Iterable[Any]) -> None:
        for entry in entries:
            node, children = entry if isinstance(entry, tuple) else (entry, [])
            href, title = getattr(node, "href", None), one_line(getattr(node, "title", "") or "")
            if href and title:
                path, _, frag = unquote(href).partition("#")
                path = posixpath.normpath(path)
                if frag:
                    anchors.setdefault(path, {}).setdefault(frag, title)
                else:
                    titles.setdefault(path, title)
            visit(children)

    visit(toc or [])
    return titles, anchors


def _landmarks(book: epub.EpubBook) -> set[str]:
    """Files the guide (EPUB 2) or the landmarks (EPUB 3) name as cover, contents, copyright..."""
    out = set()
    for ref in book.guide or []:
        kind = (ref.get("type") or "").lower().replace("copyright", "copyright-page").replace("-page-page", "-page")
        if kind in SKIP_TYPES and ref.get("href"):
            out.add(posixpath.normpath(unquote(ref["href"]).partition("#")[0]))
    for nav in (i for i in book.get_items() if isinstance(i, epub.EpubNav)):
        try:
            raw, encoding = _page_bytes(nav)
            root = parse_html(raw, "navigation", encoding)
        except BadInput:
            continue
        base = posixpath.dirname(nav.get_name())
        for landmarks in root.xpath("//nav[@*='landmarks']"):
            for a in landmarks.iter("a"):
                kinds = {v for k, v in a.attrib.items() if k.endswith("type")}
                if kinds & SKIP_TYPES and a.get("href"):
                    out.add(posixpath.normpath(posixpath.join(base, unquote(a.get("href")).partition("#")[0])))
    return out


def _not_reading_text(page: Page, name: str, title: str | None) -> bool:
    """A cover, contents or copyright page, by its epub:type, its name or title, or its content:
    mostly links (a contents page), or short and about copyright."""
    if page.types & SKIP_TYPES:
        return True
    if _SKIP_NAMES.search(posixpath.basename(name)) or (title and _SKIP_TITLES.match(title)):
        return True
    if page.text_chars and page.link_chars > 0.6 * page.text_chars:
        return True
    text = " ".join(b.text for b in page.blocks)
    return len(text) < 2000 and bool(_COPYRIGHT.search(text))


def _page_bytes(item: Any) -> tuple[bytes, str | None]:
    """A page's own bytes, as stored in the package, and their encoding (UTF-8 unless a UTF-16 BOM
    says otherwise). ebooklib's get_content() re-parses a page into its template with a parser that
    stops at a depth of 255 elements: what lay deeper was lost without a word."""
    raw = item.content if isinstance(getattr(item, "content", None), bytes) else item.get_content()
    return raw, ("utf-16" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8")
