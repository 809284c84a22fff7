"""Readers read the whole document or say what they could not read: HTML nested past libxml2's
default depth (unclosed <span>s are common in exported HTML), a reader's own errors (a charset
Python does not know, an encrypted or broken PDF) as one-line errors naming the file, and PDFs read
in time linear in their size."""

from __future__ import annotations

import time

import pytest
from helpers.books import write_zip
from helpers.cli import invoke
from narrate.jobs.documents.readers import read_any
from narrate.jobs.documents.readers.pdf import _paragraphs
from narrate.jobs.errors import BadInput


def test_unclosed_spans_lose_no_sentence(tmp_path):
    """400 paragraphs with an unclosed <span> each: every sentence, and the ending (127 of 401 before)."""
    body = "".join(f"<p><span>Sentence number {i} is here." for i in range(400)) + "<p>The very end of the book."
    (tmp_path / "spans.html").write_text(f"<html><body>{body}</body></html>")
    doc = read_any(tmp_path / "spans.html")
    assert len(doc.sentences) == 401 and doc.sentences[-1] == "The very end of the book."


def test_a_heading_deep_inside_divs_is_a_chapter(tmp_path):
    deep = "<div>" * 1500 + "<h1>Deep heading</h1><p>Deep text here.</p>" + "</div>" * 1500
    (tmp_path / "divs.html").write_text(f"<html><body><h1>First</h1><p>Opening words.</p>{deep}</body></html>")
    doc = read_any(tmp_path / "divs.html")
    assert [title for _, title in doc.chapters] == ["First", "Deep heading"]
    assert doc.sentences[-1] == "Deep text here."


def test_nesting_past_the_parsers_limit_is_refused_by_name(tmp_path):
    deep = "<div>" * 5000 + "<p>Very deep text.</p>" + "</div>" * 5000
    (tmp_path / "deeper.html").write_text(f"<html><body><p>Shallow text.</p>{deep}</body></html>")
    with pytest.raises(BadInput, match=r"deeper\.html is nested more than 2048 elements deep"):
        read_any(tmp_path / "deeper.html")


CONTAINER = (
    '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
    '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
    "</rootfiles></container>"
)
OPF = """<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">deep-1</dc:identifier>
<dc:title>Deep</dc:title><dc:language>en</dc:language></metadata>
<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
<item id="c1" href="one.xhtml" media-type="application/xhtml+xml"/>
<item id="c2" href="two.xhtml" media-type="application/xhtml+xml"/></manifest>
<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>"""
NAV = """<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><body>
<nav epub:type="toc"><ol><li><a href="one.xhtml">One</a></li><li><a href="two.xhtml">Two</a></li></ol></nav>
</body></html>"""


def _page(body: str) -> str:
    return f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head><body>{body}</body></html>'


def test_an_epub_page_nested_too_deep_is_named(tmp_path):
    """It said "no text to narrate" (the parser stopped at depth 255 and dropped the rest)."""
    path = write_zip(
        tmp_path / "deep.epub",
        {
            "META-INF/container.xml": CONTAINER,
            "OEBPS/content.opf": OPF,
            "OEBPS/nav.xhtml": NAV,
            "OEBPS/one.xhtml": _page("<h1>One</h1><p>A first chapter.</p>"),
            "OEBPS/two.xhtml": _page("<div>" * 5000 + "<p>Deep.</p>" + "</div>" * 5000),
        },
    )
    with pytest.raises(BadInput, match=r"deep\.epub: .*two\.xhtml is nested more than 2048"):
        read_any(path)
    ok = write_zip(
        tmp_path / "ok.epub",
        {
            "META-INF/container.xml": CONTAINER,
            "OEBPS/content.opf": OPF,
            "OEBPS/nav.xhtml": NAV,
            "OEBPS/one.xhtml": _page("<h1>One</h1><p>A first chapter.</p>"),
            "OEBPS/two.xhtml": _page("<div>" * 600 + "<h1>Two</h1><p>Deep but readable.</p>" + "</div>" * 600),
        },
    )
    assert read_any(ok).sentences[-1] == "Deep but readable."


def test_an_unknown_charset_is_a_one_line_error(tmp_path, env):
    bad = tmp_path / "bad.html"
    bad.write_bytes(b'<html><head><meta charset="undefined"></head><body><p>Hello there.</p></body></html>')
    with pytest.raises(BadInput, match=r"bad\.html cannot be read as html: .*UnicodeError"):
        read_any(bad)
    ran = invoke(env, "chapters", str(bad))
    assert ran.returncode == 1 and "Traceback" not in ran.stderr and "bad.html cannot be read" in ran.stderr


def _encrypted_pdf(path, user: str = "") -> None:
    from fpdf import FPDF
    from fpdf.enums import EncryptionMethod

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Hello there. This text is print-restricted.")
    pdf.set_encryption(owner_password="owner", user_password=user, encryption_method=EncryptionMethod.AES_128)
    pdf.output(str(path))


def test_an_aes_pdf_that_opens_with_an_empty_password_is_read(tmp_path):
    _encrypted_pdf(tmp_path / "restricted.pdf")
    assert read_any(tmp_path / "restricted.pdf").sentences == ["Hello there.", "This text is print-restricted."]


def test_a_password_protected_pdf_is_refused_by_name(tmp_path):
    _encrypted_pdf(tmp_path / "locked.pdf", user="secret")
    with pytest.raises(BadInput, match=r"locked\.pdf is password-protected"):
        read_any(tmp_path / "locked.pdf")


def test_an_unsupported_encryption_handler_is_a_bad_input(tmp_path):
    _encrypted_pdf(tmp_path / "odd.pdf")
    raw = (tmp_path / "odd.pdf").read_bytes()
    assert b"/Filter /Standard" in raw
    (tmp_path / "odd.pdf").write_bytes(raw.replace(b"/Filter /Standard", b"/Filter /FooBarX"))
    with pytest.raises(BadInput, match=r"odd\.pdf"):
        read_any(tmp_path / "odd.pdf")


def test_pdf_paragraphs_are_joined_in_linear_time():
    """20,000 lines and no short sentence-ending line: one paragraph. The old join searched the whole
    growing paragraph at every line (58 s for 10,000 lines); linear, it takes well under a second."""
    lines = [f"word{i} and more words on this line of the page, going on and on" for i in range(20_000)]
    pages = [lines[i : i + 50] for i in range(0, len(lines), 50)]
    t0 = time.perf_counter()
    blocks = _paragraphs(pages, {}, [{} for _ in pages])
    took = time.perf_counter() - t0
    assert len(blocks) == 1 and blocks[0].text.count(" and more words") == 20_000
    assert took < 15, took  # minutes before; a bound a loaded machine keeps


def test_hyphenated_line_ends_still_join():
    blocks = _paragraphs(
        [["The narra-", "tion goes on. Short."], ["A long line that does not end here and"]], {}, [{}, {}]
    )
    assert blocks[0].text.startswith("The narration goes on.")
