"""(X)HTML to blocks of text with lxml: one block per paragraph-like element, headings marked;
scripts, styles, images, footnote markers and footnote bodies dropped."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import lxml.html
from lxml import etree
from narrate.jobs.documents.readers.blocks import Block
from narrate.jobs.errors import BadInput

BLOCK_TAGS = frozenset(
    "p div li ul ol dl dt dd h1 h2 h3 h4 h5 h6 blockquote pre td th tr table caption figcaption section article "
    "main body aside address hr br center".split()
)
DROP_TAGS = frozenset(
    "script style head title img svg math noscript template iframe object embed audio video canvas button form "
    "select textarea input rt rp map area".split()
)
NOTE_TYPES = frozenset("noteref footnote endnote rearnote footnotes endnotes rearnotes note".split())
NOTE_ROLES = frozenset("doc-noteref doc-footnote doc-endnote doc-endnotes doc-backlink".split())
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_MARKER = re.compile(r"^[\s\[\(]*([0-9]{1,3}|[ivxlc]{1,6}|[a-z]|[*†‡§¶#]+)[\]\)\s]*$", re.IGNORECASE)


@dataclass
class Page:
    """What one (X)HTML file holds: its blocks and how much of its text sits in links."""

    blocks: list[Block] = field(default_factory=list)
    link_chars: int = 0
    text_chars: int = 0
    types: set[str] = field(default_factory=set)  # epub:type / role values on <html>, <body>, <section>

    def first_heading(self) -> str | None:
        return next((b.text for b in self.blocks if b.heading), None)


MAX_DEPTH = 2048  # libxml2's nesting limit with huge_tree (256 without)


def parse_html(raw: bytes | str, origin: str, encoding: str | None = None) -> etree._Element:
    """The root element; BadInput if nothing can be parsed, or if the parser had to stop early
    (libxml2 stops at a nesting depth, 2048 with huge_tree: what lies deeper would be lost)."""
    parser = lxml.html.HTMLParser(
        encoding=encoding, remove_comments=True, remove_pis=True, no_network=True, huge_tree=True
    )
    try:
        if isinstance(raw, str):
            raw = re.sub(r"^\s*<\?xml[^>]*\?>", "", raw)  # a str may not carry an encoding declaration
        root = lxml.html.document_fromstring(raw, parser=parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError) as e:
        raise BadInput(
            f"{origin} could not be read as HTML ({str(e).splitlines()[0] if str(e) else 'empty'})"
        ) from None
    stopped = [e for e in parser.error_log if "depth" in e.message.lower() or e.type_name == "ERR_INTERNAL_ERROR"]
    if stopped:
        raise BadInput(
            f"{origin} is nested more than {MAX_DEPTH} elements deep (from line {stopped[0].line}): what lies "
            "deeper cannot be read; close its open elements (e.g. unclosed <span> or <div>) and try again"
        )
    return root


def page_of(root: etree._Element, drop: frozenset[str] = frozenset(), anchors: dict[str, str] | None = None) -> Page:
    """The blocks of a parsed page. `drop`: more tags to leave out (e.g. nav, header, footer);
    `anchors`: element id -> chapter title, for chapters that start inside the page."""
    page = Page()
    anchors = anchors or {}
    buf: list[str] = []
    lang: list[str | None] = [None]  # the language marked on the innermost open block, if any

    def flush(heading: int = 0) -> None:
        text = "".join(buf).strip()
        buf.clear()
        if text:
            page.blocks.append(Block(text, heading, language=lang[-1]))

    def enter(el: etree._Element, in_link: bool, todo: list) -> None:
        """Open an element: its own text now; its children, their tails and its end onto `todo` (a
        stack: no recursion, so any depth the parser kept is read)."""
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        if not tag or tag in DROP_TAGS or tag in drop or _is_note(el, tag):
            return
        kinds = _types(el)
        if tag in ("html", "body", "section", "article", "div"):
            page.types.update(kinds)
        block = tag in BLOCK_TAGS
        if block:
            flush()
            # The body's own lang is the document's language (--language may override it); a
            # passage inside it may be marked as another.
            marked = None if tag in ("html", "body") else el.get("lang") or el.get("xml:lang") or el.get(XML_LANG)
            lang.append(marked.strip() if marked else lang[-1])
        if el.get("id") in anchors:
            flush()
            page.blocks.append(Block("", chapter=anchors[el.get("id")]))
        link = in_link or tag == "a"
        if el.text:
            _add(el.text, link)
        if block:
            todo.append(("end", tag, link))
        for child in reversed(el):
            if child.tail:
                todo.append(("tail", child.tail, link))
            todo.append(("enter", child, link))

    def walk(start: etree._Element) -> None:
        todo: list = [("enter", start, False)]
        while todo:
            kind, item, link = todo.pop()
            if kind == "enter":
                enter(item, link, todo)
            elif kind == "tail":
                _add(item, link)
            else:  # the end of a block
                flush(int(item[1]) if item in ("h1", "h2", "h3", "h4", "h5", "h6") else 0)
                lang.pop()

    def _add(text: str, link: bool) -> None:
        buf.append(text)
        n = len(text.strip())
        page.text_chars += n
        if link:
            page.link_chars += n

    body = root.find("body")
    walk(body if body is not None else root)
    flush()
    return page


def _types(el: etree._Element) -> set[str]:
    values = " ".join(v for k, v in el.attrib.items() if k in ("epub:type", "type", "role") or k.endswith("}type"))
    return set(values.lower().split())


def _is_note(el: etree._Element, tag: str) -> bool:
    """A footnote marker (a noteref link, a <sup> holding only a number or symbol) or a note's body."""
    kinds = _types(el)
    if kinds & NOTE_TYPES or kinds & NOTE_ROLES:
        return True
    if tag == "sup":
        return bool(_MARKER.match(el.text_content() or "")) or el.find(".//a") is not None
    if tag == "a" and el.getparent() is not None and (el.get("href") or "").startswith("#"):
        return bool(_MARKER.match(el.text_content() or "")) and (el.text_content() or "").strip() != ""
    return False
