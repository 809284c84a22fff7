"""The parts of an EPUB 3 package narrate writes: the package document's metadata for media
overlays (per-item and total `media:duration`, `media:active-class`, `media:narrator`), a
package document of its own for a book made from a document, the navigation document, the
container and the overlay's stylesheet."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from lxml import etree
from narrate.jobs.documents.readers.epub_clean import OPF
from narrate.jobs.readalong.smil import clock
from narrate.jobs.readalong.xhtml_pages import OPS, XHTML, XML_LANG
from narrate.jobs.xmltext import xml_text

DC = "http://purl.org/dc/elements/1.1/"
ACTIVE_CLASS = "-epub-media-overlay-active"
STYLE = f""".{ACTIVE_CLASS} {{
  background-color: #fff1a8;
  color: #111111;
}}
"""


@dataclass(frozen=True)
class BookInfo:
    """What the package says about the book."""

    identifier: str  # urn:uuid:... (a book made from a document; an EPUB keeps its own)
    title: str
    language: str
    modified: datetime  # UTC
    author: str | None = None
    narrator: str | None = None
    cover: bytes | None = None  # a JPEG or PNG (a book made from a document; an EPUB keeps its own)
    chapters: list[tuple[str, str]] = field(default_factory=list)  # (title, path#fragment in the package)


def nav_document(title: str, language: str, entries: Sequence[tuple[str, str]]) -> bytes:
    """A navigation document listing `entries` (title, URL relative to it)."""
    root = etree.Element(f"{{{XHTML}}}html", nsmap={None: XHTML, "epub": OPS})
    root.set("lang", language)
    root.set(XML_LANG, language)
    head = etree.SubElement(root, f"{{{XHTML}}}head")
    etree.SubElement(head, f"{{{XHTML}}}title").text = xml_text(title)
    nav = etree.SubElement(etree.SubElement(root, f"{{{XHTML}}}body"), f"{{{XHTML}}}nav")
    nav.set(f"{{{OPS}}}type", "toc")
    nav.set("id", "toc")
    etree.SubElement(nav, f"{{{XHTML}}}h1").text = "Contents"
    listing = etree.SubElement(nav, f"{{{XHTML}}}ol")
    for name, href in entries or [(title, "#toc")]:
        link = etree.SubElement(etree.SubElement(listing, f"{{{XHTML}}}li"), f"{{{XHTML}}}a")
        link.set("href", href)
        link.text = xml_text(name) or "Untitled"
    out: bytes = etree.tostring(root, xml_declaration=True, encoding="utf-8", doctype="<!DOCTYPE html>")
    return out


def new_package(info: BookInfo) -> etree._Element:
    """An empty EPUB 3 package document: its metadata, an empty manifest and spine."""
    package = etree.Element(f"{{{OPF}}}package", nsmap={None: OPF})
    package.set("version", "3.0")
    package.set("unique-identifier", "book-id")
    package.set(XML_LANG, info.language)
    metadata = etree.SubElement(package, f"{{{OPF}}}metadata", nsmap={"dc": DC})
    ident = etree.SubElement(metadata, f"{{{DC}}}identifier")
    ident.set("id", "book-id")
    ident.text = info.identifier
    etree.SubElement(metadata, f"{{{DC}}}title").text = xml_text(info.title) or "Untitled"
    etree.SubElement(metadata, f"{{{DC}}}language").text = info.language
    if info.author:
        etree.SubElement(metadata, f"{{{DC}}}creator").text = xml_text(info.author)
    etree.SubElement(package, f"{{{OPF}}}manifest")
    etree.SubElement(package, f"{{{OPF}}}spine")
    return package


class Package:
    """A package document being changed: items added with ids of their own, pages given their
    overlays, the metadata for them."""

    def __init__(self, root: etree._Element, base: str):
        self.root = root
        self.base = base  # the package document's folder in the package ("" at the top)
        self.version = root.get("version", "2.0")
        self.metadata = self._child("metadata")
        self.manifest = self._child("manifest")
        self.spine = self._child("spine")
        self.ids = {el.get("id") for el in root.iter() if isinstance(el.tag, str) and el.get("id")}

    def _child(self, name: str) -> etree._Element:
        found = self.root.find(f"{{{OPF}}}{name}")
        if found is None:
            found = etree.SubElement(self.root, f"{{{OPF}}}{name}")
        return found

    def new_id(self, wanted: str) -> str:
        ident, n = wanted, 1
        while ident in self.ids:
            n += 1
            ident = f"{wanted}-{n}"
        self.ids.add(ident)
        return ident

    def href(self, path: str) -> str:
        """A path in the package as the package document refers to it."""
        prefix = f"{self.base}/" if self.base else ""
        assert path.startswith(prefix), path
        return path[len(prefix) :]

    def add_item(
        self, path: str, media_type: str, wanted_id: str, properties: str | None = None, overlay: str | None = None
    ) -> str:
        """A manifest item (`overlay`: the id of its media overlay); returns its id."""
        item = etree.SubElement(self.manifest, f"{{{OPF}}}item")
        ident = self.new_id(wanted_id)
        item.set("id", ident)
        item.set("href", self.href(path))
        item.set("media-type", media_type)
        if properties:
            item.set("properties", properties)
        if overlay:
            item.set("media-overlay", overlay)
        return ident

    def item_of(self, path: str) -> etree._Element | None:
        from urllib.parse import unquote

        want = self.href(path)
        return next((el for el in self.manifest if unquote(el.get("href") or "") == want), None)

    def has_nav(self) -> bool:
        return any("nav" in (el.get("properties") or "").split() for el in self.manifest)

    def spine_add(self, ident: str) -> None:
        etree.SubElement(self.spine, f"{{{OPF}}}itemref").set("idref", ident)

    def make_epub3(self, modified: datetime) -> None:
        """Version 3.0 with its last-modified date; an EPUB 2's `opf:` attributes on metadata (which
        EPUB 3 refuses) dropped; any media overlays it had before, replaced by narrate's."""
        if not self.version.startswith("3"):
            for el in self.metadata:
                if isinstance(el.tag, str):
                    for k in [k for k in el.attrib if k.startswith(f"{{{OPF}}}")]:
                        del el.attrib[k]
        self.root.set("version", "3.0")
        for el in list(self.metadata):
            prop = (el.get("property") or "") if isinstance(el.tag, str) else ""
            if prop.startswith("media:") or prop == "dcterms:modified":
                _remove(el)
        for el in self.manifest:
            if isinstance(el.tag, str):
                el.attrib.pop("media-overlay", None)
        self.meta("dcterms:modified", modified.strftime("%Y-%m-%dT%H:%M:%SZ"))

    def meta(self, prop: str, value: str, refines: str | None = None) -> None:
        el = etree.SubElement(self.metadata, f"{{{OPF}}}meta")
        el.set("property", prop)
        if refines:
            el.set("refines", f"#{refines}")
        el.text = value

    def overlays(self, durations: dict[str, float], narrator: str | None) -> None:
        """Each overlay's duration (by its item id), the total, the active class, the narrator."""
        for ident, seconds in durations.items():
            self.meta("media:duration", clock(seconds), ident)
        self.meta("media:duration", clock(sum(round(s, 3) for s in durations.values())))
        self.meta("media:active-class", ACTIVE_CLASS)
        if narrator:
            self.meta("media:narrator", xml_text(narrator))

    def xml(self) -> bytes:
        out: bytes = etree.tostring(self.root, xml_declaration=True, encoding="utf-8")
        return out


def _remove(el: etree._Element) -> None:
    """Remove an element, keeping the text after it."""
    parent = el.getparent()
    if el.tail:
        before = el.getprevious()
        if before is not None:
            before.tail = (before.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)
