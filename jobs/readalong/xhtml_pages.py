"""The pages of a read-along book, each sentence of the plan marked in them: an EPUB's own XHTML
pages (those its reader read, in reading order: Document.source_pages), or XHTML made from the
document (text, Markdown, HTML, PDF), one page a chapter."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from lxml import etree
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.readers.epub_clean import DOCTYPE, XHTML
from narrate.jobs.documents.selection import spans
from narrate.jobs.readalong import marking
from narrate.jobs.xmltext import named_entity, xml_text

OPS = "http://www.idpf.org/2007/ops"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_ENTITY = re.compile(r"&([A-Za-z][A-Za-z0-9]*);")


@dataclass
class Page:
    path: str  # its name in the package
    tree: etree._ElementTree
    title: str | None = None
    marked: dict[int, str] = field(default_factory=dict)  # sentence index -> the id of its span
    words: dict[int, list[str | None]] = field(default_factory=dict)  # sentence index -> each word's id

    @property
    def body(self) -> etree._Element:
        root = self.tree.getroot()
        found = root.find(f"{{{XHTML}}}body")
        return found if found is not None else root

    def link_style(self, href: str) -> None:
        """A stylesheet link in the page's head (the overlay's active class)."""
        root = self.tree.getroot()
        head = root.find(f"{{{XHTML}}}head")
        if head is None:
            head = etree.Element(f"{{{XHTML}}}head")
            root.insert(0, head)
        link = etree.SubElement(head, f"{{{XHTML}}}link")
        link.set("rel", "stylesheet")
        link.set("type", "text/css")
        link.set("href", href)

    def xhtml(self) -> bytes:
        out: bytes = etree.tostring(self.tree, xml_declaration=True, encoding="utf-8", doctype=DOCTYPE)
        return out


def parse_xhtml(raw: bytes, path: str) -> etree._ElementTree:
    """A page as XML (HTML's named entities, which XML does not know, as the characters they name);
    ValueError when it is not well-formed."""
    text = raw.decode("utf-8-sig", errors="strict") if not raw.startswith((b"\xff\xfe", b"\xfe\xff")) else None
    if text is None:
        text = raw.decode("utf-16")
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)
    text = _ENTITY.sub(named_entity, text)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True, load_dtd=False)
    try:
        return etree.ElementTree(etree.fromstring(text.encode(), parser))
    except etree.XMLSyntaxError as e:
        raise ValueError(f"{path} is not well-formed XHTML: {e}") from None


def mark(pages: Sequence[Page], sentences: Sequence[str], words: dict[int, list[str]] | None = None) -> int:
    """Find each sentence (in order) in the pages and wrap it in a span `nr-sN` (N: its index),
    and its words (`words`: sentence index -> its words, in order) in spans `nr-sN-wJ`; returns how
    many sentences were found."""
    streams = [marking.stream_of(p.body) for p in pages]
    hits = marking.find_all([s.key for s in streams], sentences)
    taken = [marking.ids_in(p.tree.getroot()) for p in pages]
    for i in reversed(range(len(sentences))):  # the last first: the places of the ones before stay true
        hit = hits[i]
        if hit is None:
            continue
        page = pages[hit.page]
        ident = marking.new_id(f"nr-s{i}", taken[hit.page])
        span = marking.wrap(*streams[hit.page].place(hit.first, hit.last), ident)
        page.marked[i] = ident
        if words and words.get(i):
            page.words[i] = marking.mark_words(span, words[i], ident, taken[hit.page])
    return sum(h is not None for h in hits)


def document_pages(doc: Document, folder: str) -> list[Page]:
    """XHTML made from a document: one page a chapter (`folder`/chNNN.xhtml), a heading and a
    paragraph for each of its paragraphs, each sentence already in its span."""
    pages = []
    index = 0
    for n, (first, end, title) in enumerate(spans(list(doc.chapters), len(doc.paragraphs), doc.title), 1):
        root = etree.Element(f"{{{XHTML}}}html", nsmap={None: XHTML, "epub": OPS})
        root.set("lang", doc.language)
        root.set(XML_LANG, doc.language)
        head = etree.SubElement(root, f"{{{XHTML}}}head")
        etree.SubElement(head, f"{{{XHTML}}}title").text = xml_text(title)
        section = etree.SubElement(etree.SubElement(root, f"{{{XHTML}}}body"), f"{{{XHTML}}}section")
        section.set(f"{{{OPS}}}type", "chapter")
        section.set("id", f"chapter-{n}")
        heading = bool(doc.paragraphs[first:end]) and marking.folded(" ".join(doc.paragraphs[first])) == marking.folded(
            title
        )
        if not heading:
            etree.SubElement(section, f"{{{XHTML}}}h1").text = xml_text(title)
        page = Page(f"{folder}/ch{n:03d}.xhtml", etree.ElementTree(root), title)
        for p in range(first, end):
            block = etree.SubElement(section, f"{{{XHTML}}}h1" if heading and p == first else f"{{{XHTML}}}p")
            if doc.language_of(p) != doc.language:
                block.set("lang", doc.language_of(p))
                block.set(XML_LANG, doc.language_of(p))
            last = None
            for sentence in doc.paragraphs[p]:
                if last is not None:
                    last.tail = " "
                last = etree.SubElement(block, f"{{{XHTML}}}span")
                last.set("id", f"nr-s{index}")
                last.text = xml_text(sentence)
                page.marked[index] = f"nr-s{index}"
                index += 1
        pages.append(page)
    return pages


def mark_words(pages: Sequence[Page], words: dict[int, list[str]]) -> None:
    """The words of sentences already in their spans (pages made by `document_pages`)."""
    for page in pages:
        taken = marking.ids_in(page.tree.getroot())
        for i, ident in page.marked.items():
            if words.get(i):
                span = next(el for el in page.body.iter(f"{{{XHTML}}}span") if el.get("id") == ident)
                page.words[i] = marking.mark_words(span, words[i], ident, taken)
