"""Read-along books in the tests: an EPUB to narrate (a real PNG cover, a footnote, an image,
emphasis that holds two sentences, a sentence across a link), EPUBCheck (Debian's `epubcheck`
package: .ci/run installs it; the tests that need it skip and say why where it or Java is missing),
the Readium manifest's JSON Schema (tests/fixtures/readium-webpub-manifest) and the overlays'
clip times read back."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zipfile
import zlib
from pathlib import Path
from typing import Any

from lxml import etree

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "readium-webpub-manifest" / "schema"
SMIL = "{http://www.w3.org/ns/SMIL}"
EPUBCHECK_MISSING = (
    "no epubcheck (Debian's epubcheck package, with Java: .ci/run installs it with apt-get when it runs as "
    "root; `apt-get install -y epubcheck`)"
)


def png(width: int = 4, height: int = 4) -> bytes:
    """A real (decodable) PNG of red pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + b"\xff\0\0" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def page(epub: Any, name: str, title: str, body: str, uid: str) -> Any:
    item = epub.EpubHtml(title=title, file_name=name, lang="en", uid=uid)
    item.content = (
        '<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">'
        f"<head><title>{title}</title></head><body>{body}</body></html>"
    )
    return item


def make_readalong_epub(path: Path) -> Path:
    """An EPUB 3 that EPUBCheck accepts as it is: a PNG cover, a contents page (not read), three
    chapters (one with a footnote, an image, emphasis holding two sentences and a sentence that
    runs through a link)."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("narrate-readalong-test")
    book.set_title("The Lighthouse Keeper")
    book.set_language("en")
    book.add_author("Ada Lovelace")
    book.set_cover("images/cover.png", png())
    listing = '<h1>Contents</h1><ol><li><a href="ch1.xhtml">One</a></li></ol>'
    contents = page(epub, "contents.xhtml", "Contents", listing, "contents")
    ch1 = page(
        epub,
        "ch1.xhtml",
        "Arrival",
        '<h1>Chapter One</h1><p>The keeper climbed the stairs.<sup><a epub:type="noteref" href="#n1">1</a></sup> '
        "The lamp was cold.</p><p><em>It was late. The sea was loud.</em> He lit the wick&#160;at once.</p>"
        '<p><img src="images/cover.png" alt="The lamp"/></p>'
        '<aside epub:type="footnote" id="n1"><p>There were ninety-nine stairs.</p></aside>',
        "ch1",
    )
    ch2 = page(
        epub,
        "ch2.xhtml",
        "The Storm",
        '<h1>Chapter Two</h1><p>Rain hammered <a href="ch3.xhtml">the '
        "glass of the tower</a> all night. Ships waited.</p>",
        "ch2",
    )
    ch3 = page(epub, "ch3.xhtml", "Dawn", "<h1>Chapter Three</h1><p>Morning came at last.</p>", "ch3")
    for item in (contents, ch1, ch2, ch3):
        book.add_item(item)
    book.toc = [
        epub.Link("ch1.xhtml", "Arrival", "ch1"),
        epub.Link("ch2.xhtml", "The Storm", "ch2"),
        epub.Link("ch3.xhtml", "Dawn", "ch3"),
    ]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["cover", "nav", contents, ch1, ch2, ch3]
    epub.write_epub(str(path), book)
    return path


def epubcheck_command() -> list[str] | None:
    """How to run EPUBCheck here: Debian's /usr/bin/epubcheck is the jar itself (run through
    binfmt where that is set up, so `java -jar` it), None when there is none or no Java."""
    found = shutil.which("epubcheck")
    if found is None:
        return None
    real = Path(found).resolve()
    if real.read_bytes()[:2] == b"PK":
        java = shutil.which("java")
        return [java, "-jar", str(real)] if java else None
    return [str(real)]


def epubcheck(path: Path) -> tuple[int, int, str]:
    """(errors and fatal errors, warnings, the report) of EPUBCheck on `path`."""
    command = epubcheck_command()
    assert command is not None, EPUBCHECK_MISSING
    ran = subprocess.run([*command, str(path)], capture_output=True, text=True, timeout=300)
    report = ran.stdout + ran.stderr
    m = re.search(r"Messages: (\d+) fatals? / (\d+) errors? / (\d+) warnings?", report)
    assert m, report
    return int(m.group(1)) + int(m.group(2)), int(m.group(3)), report


def clock(value: str) -> float:
    """A SMIL clock value in seconds (full or partial clock, or a timecount)."""
    if value.endswith("ms"):
        return float(value[:-2]) / 1000
    if value.endswith("s"):
        return float(value[:-1])
    parts = [float(p) for p in value.split(":")]
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + p
    return seconds


def overlays(epub_path: Path) -> dict[str, tuple[float, float]]:
    """Every par of every SMIL document in the EPUB: its text fragment id -> (clipBegin, clipEnd)."""
    out = {}
    with zipfile.ZipFile(epub_path) as z:
        for name in z.namelist():
            if name.endswith(".smil"):
                root = etree.fromstring(z.read(name))
                for par in root.iter(f"{SMIL}par"):
                    src = par.find(f"{SMIL}text").get("src")
                    audio = par.find(f"{SMIL}audio")
                    out[src.split("#", 1)[1]] = (clock(audio.get("clipBegin")), clock(audio.get("clipEnd")))
    return out


def readium_validator() -> Any:
    """A validator of the Readium Web Publication Manifest's schema with every file it refers to
    read from the fixtures, under the https and the http URLs the files use (OPDS's link
    properties, which narrate never writes, as the empty schema: see the fixture's README)."""
    import jsonschema_rs

    resources = [("https://drafts.opds.io/schema/properties.schema.json", {})]
    for path in sorted(FIXTURES.rglob("*.json")):
        doc = json.loads(path.read_text())
        rel = path.relative_to(FIXTURES).as_posix()
        resources += [(f"{scheme}://readium.org/webpub-manifest/schema/{rel}", doc) for scheme in ("https", "http")]
    schema = json.loads((FIXTURES / "publication.schema.json").read_text())
    return jsonschema_rs.validator_for(schema, registry=jsonschema_rs.Registry(resources), validate_formats=True)


W3C_FIXTURES = FIXTURES.parent.parent / "w3c-pub-manifest" / "schema"
W3C_BASE = "https://w3c.github.io/pub-manifest/schema/"


def w3c_validator() -> Any:
    """A validator of the W3C Publication Manifest's schema, every file it refers to read from the
    fixtures (its 12 kB URL expression as a plain URI-reference check: see the fixture's README)."""
    import jsonschema_rs

    resources = [(W3C_BASE + "url.schema.json", {"type": "string", "format": "uri-reference"})]
    resources += [(W3C_BASE + p.name, json.loads(p.read_text())) for p in sorted(W3C_FIXTURES.glob("*.json"))]
    schema = json.loads((W3C_FIXTURES / "publication.schema.json").read_text())
    return jsonschema_rs.validator_for(schema, registry=jsonschema_rs.Registry(resources), validate_formats=True)


def word_sequences(epub_path: Path) -> dict[str, list[tuple[str, float, float]]]:
    """Every sentence read along word by word (a `seq` of the SMIL documents): its span's id -> each word's par as
    (the word's span id, clipBegin, clipEnd), in order."""
    out: dict[str, list[tuple[str, float, float]]] = {}
    with zipfile.ZipFile(epub_path) as z:
        for name in z.namelist():
            if name.endswith(".smil"):
                root = etree.fromstring(z.read(name))
                for seq in root.iter(f"{SMIL}seq"):
                    sentence = seq.get("{http://www.idpf.org/2007/ops}textref").split("#", 1)[1]
                    pars = []
                    for par in seq.iter(f"{SMIL}par"):
                        audio = par.find(f"{SMIL}audio")
                        word = par.find(f"{SMIL}text").get("src").split("#", 1)[1]
                        pars.append((word, clock(audio.get("clipBegin")), clock(audio.get("clipEnd"))))
                    out[sentence] = pars
    return out
