"""A source EPUB written by an attacker: its reader reads, and its read-along book keeps, only what
its package lists, under names inside the container, with nothing that runs or loads from
elsewhere; entities of its internal DTD written out, ids made unique, characters XML refuses gone.
EPUBCheck accepts the read-along book."""

from __future__ import annotations

import re
import zipfile
from datetime import UTC, datetime

import pytest
from helpers.books import make_epub2, write_zip
from helpers.hostile_epub import make_hostile_epub
from helpers.readalong import EPUBCHECK_MISSING, epubcheck, epubcheck_command
from lxml import etree
from narrate.jobs.documents.readers.epub import parse_epub
from narrate.jobs.documents.readers.epub_clean import clean_source
from narrate.jobs.errors import BadInput
from narrate.jobs.readalong.overlay_epub import Narration, write_epub
from narrate.jobs.readalong.package import BookInfo
from narrate.jobs.readalong.timing import Clip

KEPT = {
    "mimetype",
    "META-INF/container.xml",
    "OEBPS/content.opf",
    "OEBPS/nav.xhtml",
    "OEBPS/text/ch1.xhtml",
    "OEBPS/text/ch2.xhtml",
    "OEBPS/style.css",
    "OEBPS/pic.png",
    "OEBPS/art.svg",
    "OEBPS/app.js",
}


def read_along(tmp_path, epub):
    doc = parse_epub(epub.read_bytes(), epub.name, "x", 10**8, False, keep_source=True)
    clips = {i: Clip(i, i * 1.0, i + 0.8) for i in range(len(doc.sentences))}
    audio = tmp_path / "a.mp3"
    audio.write_bytes(b"\xff\xfb\x90\x64" + b"\0" * 400)  # EPUBCheck does not decode audio
    info = BookInfo(
        "urn:uuid:00000000-0000-4000-8000-000000000001", doc.title, "en", datetime(2026, 1, 2, tzinfo=UTC), "Ada", "Ann"
    )
    out = tmp_path / "out.epub"
    written = write_epub(out, doc, Narration(doc.sentences, clips, {0: doc.title}), info, audio)
    return doc, written, out


def test_the_reader_reads_only_the_listed_pages_with_their_entities_written_out(tmp_path):
    doc = parse_epub(make_hostile_epub(tmp_path / "h.epub").read_bytes(), "h.epub", "x", 10**8, False)
    assert doc.title == "The Keeper's Trap"  # U+FFFF gone from the title
    assert doc.sentences[:3] == ["The Stairs", "Then the old keeper climbed the stairs.", "The lamp was cold and dark."]
    assert not any("&" in s or "passwd" in s or "\uffff" in s for s in doc.sentences)
    assert doc.sentences.count("Ships waited beyond the rocks.") == 1  # the page outside the container is not read


def test_a_hostile_source_leaves_nothing_that_runs_or_loads_from_elsewhere(tmp_path):
    doc, written, out = read_along(tmp_path, make_hostile_epub(tmp_path / "h.epub"))
    assert (written.sentences, written.marked) == (len(doc.sentences), len(doc.sentences))
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        texts = {n: z.read(n).decode() for n in names if n.endswith((".xhtml", ".css", ".svg", ".opf", ".xml"))}
    assert {n for n in names if not n.startswith("OEBPS/narrate/")} == KEPT  # not secret.txt, signatures, ../
    assert all(".." not in n.split("/") for n in names)
    for name, text in texts.items():
        low = text.lower()
        for bad in (
            "<script",
            "javascript:",
            "evil.example",
            "<iframe",
            "<object",
            "<embed",
            "<base",
            "http-equiv",
            "expression(",
            "behavior",
            "<set",
            "&keeper;",
            "&secret;",
            "passwd",
            "\uffff",
        ):
            assert bad not in low, (name, bad)
        assert not re.search(r"\son[a-z]+\s*=", text), name
        if name.endswith((".xhtml", ".svg", ".opf", ".xml")):
            root = etree.fromstring(text.encode())  # well-formed, no DTD left
            ids = [el.get("id") for el in root.iter() if isinstance(el.tag, str) and el.get("id")]
            assert len(ids) == len(set(ids)), name
    ch1 = texts["OEBPS/text/ch1.xhtml"]
    assert 'href="https://example.org/about"' in ch1 and 'href="ch2.xhtml#start"' in ch1  # links that stay
    assert 'src="../pic.png"' in ch1 and "Then the old keeper climbed the stairs." in ch1
    assert "../style.css" in ch1
    nav = texts["OEBPS/nav.xhtml"]
    assert nav.count("<li>") == 2 and "The Stairs" in nav and "The Lamp" in nav  # the escaping entries went
    opf = texts["OEBPS/content.opf"]
    assert "evil.xhtml" not in opf and "scripted" not in opf and "remote-resources" not in opf
    assert re.search(r'id="ch1"[^>]*properties="svg"|properties="svg"[^>]*id="ch1"', opf)
    if epubcheck_command() is None:
        pytest.skip(EPUBCHECK_MISSING)
    errors, _, report = epubcheck(out)
    assert errors == 0, report


def test_cleaning_a_clean_book_changes_nothing(tmp_path):
    once = clean_source(make_hostile_epub(tmp_path / "h.epub").read_bytes())
    again = clean_source(write_zip(tmp_path / "c.epub", dict(once.files)).read_bytes())
    assert again.dropped == [] and again.files == once.files


def test_an_epub_2_page_that_is_not_well_formed_is_written_as_xhtml(tmp_path):
    with zipfile.ZipFile(make_epub2(tmp_path / "o.epub")) as z:
        files = {n: z.read(n) for n in z.namelist() if n != "mimetype"}
    files["OEBPS/a.html"] = b"<html><body><p>A fox was hungry.<br>It saw grapes &amp grapes.<p>The end.</body></html>"
    files["OEBPS/content.opf"] = files["OEBPS/content.opf"].replace(b"Old Tales", "Old\uffff Tales\x01".encode())
    _, written, out = read_along(tmp_path, write_zip(tmp_path / "bad.epub", files))
    assert written.marked == written.sentences
    with zipfile.ZipFile(out) as z:
        etree.fromstring(z.read("OEBPS/a.html"))  # well-formed now
        assert b"Old Tales</dc:title>" in z.read("OEBPS/content.opf")


def test_a_package_document_outside_the_container_is_refused(tmp_path):
    with zipfile.ZipFile(make_epub2(tmp_path / "o.epub")) as z:
        files = {n: z.read(n) for n in z.namelist() if n != "mimetype"}
    files["META-INF/container.xml"] = files["META-INF/container.xml"].replace(b"OEBPS/content.opf", b"../content.opf")
    files["../content.opf"] = files["OEBPS/content.opf"]
    with pytest.raises(BadInput, match="not a valid EPUB"):
        parse_epub(write_zip(tmp_path / "x.epub", files).read_bytes(), "x.epub", "x", 10**8, False)
