"""PDF with a text layer (pypdf): pages joined, running headers and footers and page numbers
removed, hyphenation at line ends undone, lines rejoined into paragraphs; chapters from the
outline (bookmarks) where it has one, else from headings set larger than the body text
(readers/pdf_headings.py)."""

from __future__ import annotations

import io
import logging
import re
from collections import Counter
from typing import TYPE_CHECKING

from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.readers.blocks import Block, build_document, chapter_level
from narrate.jobs.documents.readers.pdf_headings import PageSizes, heading_levels
from narrate.jobs.documents.voicing import Voicing
from narrate.jobs.errors import BadInput

if TYPE_CHECKING:
    from pypdf import PdfReader

EDGE_LINES = 2  # lines at the top and at the bottom of a page looked at for running heads
_PAGE_NUMBER = re.compile(r"^\W*((page|p\.|seite)\s*)?(\d{1,4}|[ivxlcdm]{1,7})(\s*(of|/)\s*\d{1,4})?\W*$", re.I)
_DIGITS = re.compile(r"\d+")
_HYPHENATED = re.compile(r"(\w)[-\u00ad]$")
_SENTENCE_END = re.compile(r"[.!?:\"'”’)\]]$")
_NO_TEXT = "has no text layer (a scanned PDF?): run OCR first, e.g. ocrmypdf"


def parse_pdf(
    raw: bytes, origin: str, fallback_title: str, language: str | None = None, voicing: Voicing | None = None
) -> Document:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # it warns about every oddity on stderr
    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted and not reader.decrypt(""):
            raise BadInput(f"{origin} is password-protected: save an unprotected copy first")
        starts = _outline(reader)
        sizes = [PageSizes() for _ in reader.pages]
        pages = [
            page.extract_text(visitor_text=None if starts else seen) or ""
            for page, seen in zip(reader.pages, sizes, strict=True)
        ]
        title = (reader.metadata.title or "").strip() if reader.metadata else ""
    except BadInput:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as e:
        why = str(e).strip().splitlines()[:1] or [type(e).__name__]
        raise BadInput(f"{origin} is not a readable PDF ({why[0]})") from None
    if not any(re.search(r"\w", p) for p in pages):
        raise BadInput(f"{origin} {_NO_TEXT}")
    lines = _strip_running_heads([[ln.strip() for ln in p.splitlines() if ln.strip()] for p in pages])
    headings = [{} for _ in lines] if starts else heading_levels((s.finish() for s in sizes), lines)
    blocks = _paragraphs(lines, starts, headings)
    nothing = f" (it {_NO_TEXT})"
    return build_document(blocks, title[:200] or fallback_title, origin, None, nothing, language, voicing)


def _outline(reader: PdfReader) -> dict[int, str]:
    """Page index -> title of the first top-level bookmark on that page."""
    out: dict[int, str] = {}
    for item in reader.outline or []:
        if isinstance(item, list):
            continue
        try:
            page = reader.get_destination_page_number(item)
        except Exception:  # noqa: BLE001 - a broken bookmark is only a missing chapter mark
            continue
        if page is not None and page >= 0 and getattr(item, "title", None):
            out.setdefault(page, str(item.title))
    return out


def _strip_running_heads(pages: list[list[str]]) -> list[list[str]]:
    """Drop page numbers, and lines repeated (digits aside) at the top or bottom of most pages."""
    n = len(pages)
    counts: Counter[str] = Counter()
    for lines in pages:
        edges = {_DIGITS.sub("#", ln) for ln in lines[:EDGE_LINES] + lines[-EDGE_LINES:]}
        counts.update(edges)
    repeated = {k for k, c in counts.items() if n >= 2 and c >= max(2, (n + 1) // 2)}
    out = []
    for lines in pages:
        keep = list(lines)
        for i in [*range(min(EDGE_LINES, len(lines))), *range(max(0, len(lines) - EDGE_LINES), len(lines))]:
            if _PAGE_NUMBER.match(lines[i]) or _DIGITS.sub("#", lines[i]) in repeated:
                keep[i] = ""
        out.append([ln for ln in keep if ln])
    return out


def _paragraphs(pages: list[list[str]], starts: dict[int, str], headings: list[dict[str, int]]) -> list[Block]:
    """Lines joined into paragraphs across pages: a line that ends a sentence and is clearly
    shorter than the page's lines ends a paragraph; "narra-" + "tion" is "narration". A heading
    line is a paragraph of its own; at the chapter level it starts a chapter."""
    blocks: list[Block] = []
    para: list[str] = []  # the paragraph's pieces, joined once it ends: linear in the text's length
    level = chapter_level([lv for page in headings for lv in page.values()])

    def end() -> None:
        if para:
            blocks.append(Block("".join(para)))
            para.clear()

    for index, lines in enumerate(pages):
        if index in starts:
            end()
            blocks.append(Block("", chapter=starts[index]))
        width = max((len(ln) for ln in lines), default=0)
        for line in lines:
            heading = headings[index].get(" ".join(line.split()), 0)
            if heading:
                end()
                blocks.append(Block(line, heading, line if heading <= level else None))
                continue
            if not para:
                para.append(line)
            elif _HYPHENATED.search(para[-1][-2:]) and line[:1].islower():  # only the last line's end
                para[-1] = para[-1][:-1]
                para.append(line)
            else:
                para.extend((" ", line))
            if _SENTENCE_END.search(line[-1:]) and len(line) < 0.75 * width:
                end()
    end()
    return blocks
