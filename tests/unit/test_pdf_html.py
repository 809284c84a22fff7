"""PDF and HTML input, and `narrate chapters` (what would be read, before anything is queued)."""

from __future__ import annotations

import json

import pytest
from helpers.books import make_epub3, make_headed_pdf, make_text_pdf
from helpers.cli import invoke
from narrate.jobs.documents.readers import read_any

HTML = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Field Notes</title>
<meta name="author" content="Grace Hopper"><style>p { color: red }</style><script>var x = "do not read";</script>
</head><body><header><a href="/">Home</a> | Site menu</header><nav><ul><li>Link one</li></ul></nav>
<h1>Field Notes</h1><p>An opening line.</p>
<h2>Bugs</h2><p>A moth was found in the relay.<sup>1</sup> It was taped into the log.</p>
<h2>Compilers</h2><p>Programs can write programs.</p><img src="x.png" alt="a diagram">
<footer>Footer text</footer></body></html>"""


def test_text_pdf_pages_joined_running_heads_gone_hyphenation_undone(tmp_path):
    doc = read_any(make_text_pdf(tmp_path / "keeper.pdf"))
    text = " ".join(doc.sentences)
    assert "The Lighthouse Keeper" not in text  # the running header of every page
    assert not any(s.strip().isdigit() for s in doc.sentences) and " 2 " not in text  # page numbers
    assert "narration of his day" in text and "narra-" not in text  # hyphenation undone
    assert "light the great lamp." in text  # lines of a paragraph joined
    assert [t for _, t in doc.chapters] == ["Chapter One", "Chapter Two", "Chapter Three"]  # the bookmarks
    assert doc.paragraphs[doc.chapters[1][0]][0].startswith("A storm came in")
    assert doc.sentences[-1] == "The end."


def test_html_headings_are_chapters_and_page_chrome_is_dropped(tmp_path):
    page = tmp_path / "notes.html"
    page.write_text(HTML)
    doc = read_any(page)
    assert [t for _, t in doc.chapters] == ["Field Notes", "Bugs", "Compilers"]
    text = " ".join(doc.sentences)
    for gone in ("do not read", "color", "Home", "Site menu", "Link one", "Footer text", "diagram"):
        assert gone not in text, gone
    assert "A moth was found in the relay." in doc.sentences  # the footnote marker is gone
    assert (doc.title, doc.meta.author, doc.meta.language) == ("Field Notes", "Grace Hopper", "en")


def test_htm_in_a_legacy_charset(tmp_path):
    page = tmp_path / "old.htm"
    page.write_bytes(
        '<html><head><meta charset="windows-1252"></head><body><p>Café crème.</p></body></html>'.encode("cp1252")
    )
    assert read_any(page).sentences == ["Café crème."]


def test_chapters_command_prints_titles_counts_durations_first_words(env, tmp_path):
    book = make_epub3(tmp_path / "book.epub")
    proc = invoke(env, "chapters", str(book))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("The Lighthouse Keeper by Ada Lovelace: 3 chapters, 8 sentences, about 0:00:")
    assert lines[1].startswith("  1. Arrival  (3 sentences, 0:00:") and lines[2].strip().startswith("Chapter One The")
    assert lines[3].startswith("  2. The Storm  (3 sentences") and lines[5].startswith("  3. Dawn  (2 sentences")
    proc = invoke(env, "chapters", str(book), "--json")
    data = json.loads(proc.stdout)
    assert (data["title"], data["author"], data["language"], data["has_cover"]) == (
        "The Lighthouse Keeper",
        "Ada Lovelace",
        "en",
        True,
    )
    chapters = data["chapters"]
    assert [(c["title"], c["sentences"]) for c in chapters] == [("Arrival", 3), ("The Storm", 3), ("Dawn", 2)]
    assert chapters[2]["first_words"] == "Chapter Three Morning came at last."
    assert all(c["seconds"] > 0 for c in chapters)
    assert sum(c["seconds"] for c in chapters) == pytest.approx(data["seconds"], abs=0.2)


def test_chapters_of_markdown_and_a_book_without_chapters(env, tmp_path):
    md = tmp_path / "notes.md"
    md.write_text("Intro words.\n\n# One\n\nFirst. Second.\n")
    data = json.loads(invoke(env, "chapters", str(md), "--json").stdout)
    assert [(c["title"], c["sentences"]) for c in data["chapters"]] == [("notes", 1), ("One", 3)]
    plain = tmp_path / "plain.txt"
    plain.write_text("Just one line.")
    data = json.loads(invoke(env, "chapters", str(plain), "--json").stdout)
    assert [(c["title"], c["sentences"]) for c in data["chapters"]] == [("plain", 1)]


def test_pdf_without_bookmarks_takes_chapters_from_heading_sizes(tmp_path):
    doc = read_any(make_headed_pdf(tmp_path / "coast.pdf"))
    titles = [t for _, t in doc.chapters]
    # The one 24 pt line opens the book (as a lone <h1> does in HTML); the 18 pt headings, one of
    # them mid-page, are the chapters; the 14 pt section headings are read but start no chapter.
    assert titles == ["Winter by the Sea", "Chapter One", "Chapter Two", "Chapter Three"]
    first = {t: doc.paragraphs[p][0] for p, t in doc.chapters}
    assert first["Chapter Two"] == "Chapter Two"  # the heading is read, as a paragraph of its own
    assert doc.paragraphs[doc.chapters[2][0] + 1][0].startswith("A storm came in")
    sentences = doc.sentences
    assert "The Lamp" in sentences and "The Storm" in sentences  # sections: their own paragraph
    assert not any("Notes from the Coast" in s for s in sentences)  # the running header
    assert not any(s.strip().isdigit() for s in sentences)


def test_pdf_whose_chapter_headings_are_only_bold(tmp_path):
    doc = read_any(make_headed_pdf(tmp_path / "plain.pdf", bold_only=True))
    assert [t for _, t in doc.chapters] == ["Chapter One", "Chapter Two", "Chapter Three"]
    assert doc.paragraphs[0] == ["These notes were kept over one long winter by the sea."]


def test_pdf_in_one_type_size_has_no_chapters(tmp_path):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    for line in ("A short note.", "Chapter and verse are quoted here in plain type.", "The end."):
        pdf.cell(0, 7, line)
        pdf.ln(7)
    pdf.output(str(tmp_path / "note.pdf"))
    doc = read_any(tmp_path / "note.pdf")
    assert doc.chapters == []
    assert doc.sentences[0] == "A short note."
