"""What a library folder says about its book: Audiobookshelf's `metadata.json` (read by its scanner,
advplyr/audiobookshelf server/utils/generators/abmetadataGenerator.js `parseJson`: older servers read
the fields under "metadata", newer ones at the top level, so both are written, the same), an OPF
2.0 package document (`metadata.opf`: what ABS and calibre read from a folder), `desc.txt` and
`reader.txt`."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from narrate.jobs.xmltext import xml_text

DC = "http://purl.org/dc/elements/1.1/"
OPF = "http://www.idpf.org/2007/opf"


@dataclass(frozen=True)
class BookInfo:
    title: str
    authors: list[str]
    narrators: list[str]
    job_id: str
    series: str = ""
    series_index: str = ""
    year: str = ""
    publisher: str = ""
    isbn: str = ""
    language: str = ""
    description: str = ""
    chapters: list[tuple[float, float, str]] = field(default_factory=list)  # (start s, end s, title)

    @property
    def series_line(self) -> str:
        """ABS's series string: "Name #2" (its scanner takes the sequence after " #")."""
        return f"{self.series} #{self.series_index}" if self.series and self.series_index else self.series


def abs_json(info: BookInfo) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "title": info.title,
        "subtitle": None,
        "authors": info.authors,
        "narrators": info.narrators,
        "series": [info.series_line] if info.series else [],
        "genres": [],
        "publishedYear": info.year or None,
        "publishedDate": None,
        "publisher": info.publisher or None,
        "description": info.description or None,
        "isbn": info.isbn or None,
        "asin": None,
        "language": info.language or None,
        "explicit": False,
        "abridged": False,
    }
    chapters = [
        {"id": i, "start": round(s, 3), "end": round(e, 3), "title": t} for i, (s, e, t) in enumerate(info.chapters)
    ]
    return {"tags": [], "chapters": chapters, **fields, "metadata": fields, "narrate": {"job": info.job_id}}


def opf(info: BookInfo) -> bytes:
    ET.register_namespace("dc", DC)
    ET.register_namespace("opf", OPF)
    package = ET.Element(f"{{{OPF}}}package", {"version": "2.0", "unique-identifier": "narrate-id"})
    meta = ET.SubElement(package, f"{{{OPF}}}metadata")

    def dc(tag: str, text: str, **attrs: str) -> None:
        if text := xml_text(text):  # a book's metadata may hold what XML 1.0 does not allow
            el = ET.SubElement(meta, f"{{{DC}}}{tag}", {f"{{{OPF}}}{k}": v for k, v in attrs.items()})
            el.text = text

    dc("title", info.title)
    for author in info.authors:
        dc("creator", author, role="aut")
    for narrator in info.narrators:
        dc("creator", narrator, role="nrt")
    dc("publisher", info.publisher)
    dc("date", info.year)
    dc("language", info.language)
    dc("description", info.description)
    dc("identifier", info.isbn, scheme="ISBN")
    ident = ET.SubElement(meta, f"{{{DC}}}identifier", {"id": "narrate-id", f"{{{OPF}}}scheme": "narrate"})
    ident.text = info.job_id
    if series := xml_text(info.series):
        ET.SubElement(meta, f"{{{OPF}}}meta", {"name": "calibre:series", "content": series})
        if index := xml_text(info.series_index):
            ET.SubElement(meta, f"{{{OPF}}}meta", {"name": "calibre:series_index", "content": index})
    return b"<?xml version='1.0' encoding='utf-8'?>\n" + ET.tostring(package, encoding="unicode").encode()


def reader_txt(info: BookInfo) -> str:
    return ", ".join(info.narrators) + "\n"


def desc_txt(info: BookInfo) -> str:
    return info.description + "\n" if info.description else ""
