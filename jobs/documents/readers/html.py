"""HTML documents: headings become chapters; scripts, styles, navigation, page headers and
footers, images and footnote markers dropped; title, author and language from the page."""

from __future__ import annotations

import codecs
import re

from narrate.jobs.documents.documents import BookMeta, Document
from narrate.jobs.documents.encodings import decode_text
from narrate.jobs.documents.readers.blocks import Block, build_document, chapter_level, one_line
from narrate.jobs.documents.readers.xhtml import page_of, parse_html
from narrate.jobs.documents.voicing import Voicing

PAGE_CHROME = frozenset({"nav", "header", "footer", "menu"})
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def parse_html_document(
    raw: bytes, origin: str, fallback_title: str, language: str | None = None, voicing: Voicing | None = None
) -> Document:
    root = parse_html(_decode(raw, origin), origin)
    blocks = page_of(root, drop=PAGE_CHROME).blocks
    level = chapter_level([b.heading for b in blocks if b.heading])
    marked = [Block(b.text, b.heading, b.text) if b.heading and b.heading <= level else b for b in blocks]
    title = one_line(root.findtext(".//title") or "")
    author = root.xpath("string(//meta[translate(@name,'AUTHOR','author')='author']/@content)")
    meta = BookMeta(title=title[:200], author=one_line(author)[:200], language=(root.get("lang") or "").strip()[:35])
    nothing = " (no paragraphs or headings outside scripts, styles and navigation)"
    return build_document(marked, title[:200] or fallback_title, origin, meta, nothing, language, voicing)


def _decode(raw: bytes, origin: str) -> str:
    """Text by the page's declared charset, else as narrate decodes any text file."""
    declared = _CHARSET.search(raw[:4096])
    if declared:
        try:
            return raw.decode(codecs.lookup(declared.group(1).decode("ascii")).name, errors="replace")
        except LookupError:
            pass
    return decode_text(raw, origin)
