"""EPUB input: spine order, chapter titles from the navigation document or NCX, front matter
skipped, footnote markers and images dropped, metadata read; and on to an audiobook's chapters."""

from __future__ import annotations

import json

from helpers.books import COVER, make_epub2, make_epub3
from helpers.cli import invoke
from narrate.jobs.documents.readers import ReadOptions, read_any


def test_epub3_chapters_titled_from_the_navigation_in_spine_order(tmp_path):
    doc = read_any(make_epub3(tmp_path / "book.epub"))
    titles = [t for _, t in doc.chapters]
    assert titles == ["Arrival", "The Storm", "Dawn"]  # the TOC's titles, not the headings
    firsts = [doc.paragraphs[i][0] for i, _ in doc.chapters]
    assert firsts == ["Chapter One", "Chapter Two", "Chapter Three"]
    text = " ".join(doc.sentences)
    assert "Contents" not in text and "Copyright" not in text and "ISBN" not in text  # front matter skipped
    assert "The keeper climbed the stairs." in doc.sentences  # the footnote marker "1" is gone...
    assert "ninety-nine" not in text  # ...and so is the note's body
    assert "picture" not in text  # images (and their alt text) are dropped
    assert doc.title == "The Lighthouse Keeper"  # from the metadata, not the file name
    assert (doc.meta.author, doc.meta.language) == ("Ada Lovelace", "en")
    assert doc.meta.cover == COVER and doc.meta.cover_mime == "image/jpeg"


def test_front_matter_kept_when_asked(tmp_path):
    doc = read_any(make_epub3(tmp_path / "book.epub"), ReadOptions(include_front_matter=True))
    text = " ".join(doc.sentences)
    assert "All rights reserved." in text and "Contents" in text
    assert [t for _, t in doc.chapters][-3:] == ["Arrival", "The Storm", "Dawn"]


def test_epub2_with_only_an_ncx(tmp_path):
    doc = read_any(make_epub2(tmp_path / "old.epub"))
    assert doc.chapters == [(0, "The Fox"), (1, "The Crow")]
    assert doc.paragraphs == [["A fox was hungry.", "It saw grapes."], ["A crow had cheese."]]
    assert (doc.title, doc.meta.author, doc.meta.language, doc.meta.cover) == ("Old Tales", "Anon", "fr", b"")


def test_document_with_metadata_survives_the_store_format(tmp_path):
    from narrate.jobs.documents.documents import Document

    doc = read_any(make_epub3(tmp_path / "book.epub"))
    back = Document.from_json(json.loads(json.dumps(doc.to_json())))
    assert back == doc and back.meta.cover == COVER


def test_input_format_overrides_the_extension(env, tmp_path):
    disguised = make_epub2(tmp_path / "old.bin")
    proc = invoke(env, "chapters", str(disguised), "--input-format", "epub", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [c["title"] for c in json.loads(proc.stdout)["chapters"]] == ["The Fox", "The Crow"]


def test_epub_passage_marked_xml_lang_is_read_in_its_language(tmp_path):
    from ebooklib import epub
    from helpers.books import epub_page

    book = epub.EpubBook()
    book.set_identifier("mixed")
    book.set_title("Mixed")
    book.set_language("en")
    ch = epub_page(
        epub, "ch1.xhtml", "One", '<h1>One</h1><p>She wrote:</p><p xml:lang="de">Am 3. Mai kam er.</p>', "ch1"
    )
    book.add_item(ch)
    book.toc = [epub.Link("ch1.xhtml", "One", "ch1")]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", ch]
    epub.write_epub(str(tmp_path / "mixed.epub"), book)
    doc = read_any(tmp_path / "mixed.epub")
    assert doc.language == "en"
    assert list(zip(doc.languages, doc.paragraphs, strict=True))[-2:] == [
        ("en", ["She wrote:"]),
        ("de", ["Am 3. Mai kam er."]),
    ]
