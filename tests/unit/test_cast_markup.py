"""narrate's markup read into documents (jobs.cast.markup, jobs.cast.reading): voice switches at tags
(inside a sentence too), the narrator back at each paragraph's end, `[Fireball]`, `[1]`, `[sic]`
and `\\[alice]` read as text, no tag in any sentence, chapters found as before, EPUB and HTML
chapters, --dialogue-voice with markup winning where present, --strict; and documents read
without a cast exactly as before (to_json byte for byte)."""

from __future__ import annotations

import json
import re

import pytest
from helpers.books import epub_page, make_epub3
from narrate.jobs.cast.declare import parse_cast_toml, parse_voice_args
from narrate.jobs.cast.markup import read_markup
from narrate.jobs.cast.reading import make_reading, read_cast
from narrate.jobs.documents.documents import Document, parse_document
from narrate.jobs.documents.readers import ReadOptions, read_any
from narrate.jobs.errors import BadInput

CAST = parse_cast_toml(
    '[voices]\nalice = "a.wav"\n"alice:whisper" = "w.wav"\nbob = "ryan"\ndarcy = "darcy"\n'
    '[aliases]\n"Mr. Darcy" = "darcy"'
)
TAGGED = re.compile(r"\[(alice|alice:whisper|bob|darcy|narrator|/|mr\. darcy)\]", re.I)

BOOK = """# Chapter One

[alice] "We should leave," she said. The night was cold.

The wind rose. [Bob] "Not yet." [/] He sat down.

[Mr. Darcy] "Indeed." [narrator] Darcy bowed.

A goblin cast [Fireball] at [1] the wall [sic]. \\[alice] is how you tag alice.

Chapter 2

He whispered [alice:whisper] hush now [alice] and then spoke aloud.
"""


def labelled(doc: Document) -> list[tuple[str, str]]:
    return list(zip(doc.sentence_voices, doc.sentences, strict=True))


def read_text(tmp_path, text: str, name: str = "book.txt", **how) -> tuple[Document, dict]:
    path = tmp_path / name
    path.write_text(text)
    doc, report = read_cast(path, make_reading(CAST, **how))
    return doc, report.unknown


def test_tags_switch_voices_until_the_next_tag_or_the_paragraphs_end(tmp_path):
    doc, unknown = read_text(tmp_path, BOOK)
    assert labelled(doc) == [
        ("narrator", "Chapter One"),
        ("alice", '"We should leave," she said.'),
        ("alice", "The night was cold."),
        ("narrator", "The wind rose."),
        ("bob", '"Not yet."'),
        ("narrator", "He sat down."),
        ("darcy", '"Indeed."'),
        ("narrator", "Darcy bowed."),
        ("narrator", "A goblin cast [Fireball] at [1] the wall [sic]."),
        ("narrator", "[alice] is how you tag alice."),
        ("narrator", "Chapter 2"),
        ("narrator", "He whispered"),  # a tag inside a sentence splits it where the voice changes
        ("alice:whisper", "hush now"),
        ("alice", "and then spoke aloud."),
    ]
    assert doc.chapters == [(0, "Chapter One"), (5, "Chapter 2")]  # found as without a cast
    assert unknown == {"[Fireball]": 1, "[sic]": 1}  # [1] does not look like a tag
    assert not any(TAGGED.search(s) and not s.startswith("[alice] is") for s in doc.sentences)


def test_chapters_and_paragraphs_are_found_as_without_the_cast(tmp_path):
    plain = re.sub(r"(?<!\\)\[(alice|alice:whisper|bob|mr\. darcy|narrator|/)\] ?", "", BOOK, flags=re.I)
    doc, _ = read_text(tmp_path, BOOK)
    bare = parse_document(plain.replace("\\[", "[").encode(), "t")
    assert doc.chapters == bare.chapters and len(doc.paragraphs) == len(bare.paragraphs)
    assert " ".join(doc.sentences).split() == " ".join(bare.sentences).split()  # the same words, in order


def test_a_tag_is_case_insensitive_and_an_unknown_variant_is_text():
    got = read_markup("[ALICE] Hi. [Alice:Shout] Loud. [bob:whisper] Soft.", CAST)
    assert got.runs == [("alice", "Hi. [Alice:Shout] Loud. [bob:whisper] Soft.")]
    assert got.unknown == ["[Alice:Shout]", "[bob:whisper]"] and got.tagged


def test_without_a_declared_name_nothing_is_a_tag():
    got = read_markup("[alice] Hello [narrator] there.", parse_voice_args([]))
    assert got.runs == [("narrator", "[alice] Hello there.")] and got.unknown == ["[alice]"]


def test_a_paragraph_of_tags_alone_has_no_sentence(tmp_path):
    doc, _ = read_text(tmp_path, "[alice]\n\nThe narrator reads this.\n\n[bob] [/]\n\n[bob]\nBob reads this.\n")
    assert labelled(doc) == [("narrator", "The narrator reads this."), ("bob", "Bob reads this.")]


def test_strict_makes_a_tag_that_names_nobody_one_error(tmp_path):
    path = tmp_path / "book.txt"
    path.write_text("[Fireball] burns. [Fireball] again. [sic] \\[escaped] [1]\n")
    with pytest.raises(BadInput) as e:
        read_cast(path, make_reading(CAST, strict=True))
    assert str(e.value) == (
        f"{path}: tags name nobody in the cast: [Fireball] (2 times), [sic]; declare them (--voice NAME=VOICE or "
        "cast.toml), write \\[ to keep a bracket as text, or leave out --strict"
    )
    path.write_text("\\[Fireball] burns. [1] [alice] fine.\n")
    assert read_cast(path, make_reading(CAST, strict=True))[1].unknown == {}


def test_dialogue_voice_splits_quotes_where_no_tag_is(tmp_path):
    text = (
        '"Come in," said the host. "Sit."\n\n'
        '[alice] "I would rather stand," she said.\n\n'
        "“It is late,” Bob said, “and dark.”\n"
    )
    doc, _ = read_text(tmp_path, text, dialogue_voice="bob")
    assert labelled(doc) == [
        ("bob", '"Come in,"'),
        ("narrator", "said the host."),
        ("bob", '"Sit."'),
        ("alice", '"I would rather stand," she said.'),  # markup wins in its paragraph
        ("bob", "“It is late,”"),
        ("narrator", "Bob said,"),
        ("bob", "“and dark.”"),
    ]
    doc, _ = read_text(tmp_path, '"Hello," he said.\n', dialogue_voice="voices/guest.wav")
    assert labelled(doc) == [("dialogue", '"Hello,"'), ("narrator", "he said.")]
    with pytest.raises(BadInput, match="names the narrator"):
        make_reading(CAST, dialogue_voice="narrator")


def test_a_document_without_a_cast_is_byte_identical(tmp_path):
    """No cast: no `voices` key, the same JSON as before; a cast whose every sentence is the
    narrator's: no labels either."""
    path = tmp_path / "g.txt"
    path.write_text('# One\n\n"Hello," she said. [Fireball] \\[x]\n\nChapter 2\n\nThe end.\n')
    before = read_any(path)
    assert json.dumps(before.to_json()) == (  # what narrate wrote before casts existed, byte for byte
        '{"title": "g", "paragraphs": [["One"], ["\\"Hello,\\" she said.", "[Fireball] \\\\[x]"], ["Chapter 2"], '
        '["The end."]], "chapters": [[0, "One"], [2, "Chapter 2"]], "language": "en"}'
    )
    assert "voices" not in before.to_json() and before.voices is None
    assert json.dumps(before.to_json()) == json.dumps(read_any(path, ReadOptions()).to_json())
    assert Document.from_json(before.to_json()) == before
    assert before.sentence_voices == ["narrator"] * len(before.sentences)
    doc, _ = read_cast(path, make_reading(CAST))
    assert doc.voices is None  # every sentence the narrator's
    voiced, _ = read_cast(path, make_reading(CAST, dialogue_voice="alice"))
    assert voiced.voices is not None and Document.from_json(voiced.to_json()) == voiced
    with pytest.raises(BadInput, match="voices do not match"):
        Document.from_json(voiced.to_json() | {"voices": [["alice"]]})


def test_markup_in_epub_chapters(tmp_path):
    from ebooklib import epub

    path = make_epub3(tmp_path / "plain.epub")
    plain = read_any(path)
    book = epub.EpubBook()
    book.set_identifier("cast-book")
    book.set_title("Voices")
    book.set_language("en")
    pages = [
        epub_page(
            epub, "c1.xhtml", "One", "<h1>Chapter One</h1><p>[alice] “Run,” she said.</p><p>It rained.</p>", "c1"
        ),
        epub_page(epub, "c2.xhtml", "Two", "<h1>Chapter Two</h1><p>He cast <b>[Fireball]</b>. [bob] Ha!</p>", "c2"),
    ]
    for page in pages:
        book.add_item(page)
    book.toc = [epub.Link("c1.xhtml", "One", "c1"), epub.Link("c2.xhtml", "Two", "c2")]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *pages]
    epub.write_epub(str(tmp_path / "cast.epub"), book)
    doc, report = read_cast(tmp_path / "cast.epub", make_reading(CAST))
    assert labelled(doc) == [
        ("narrator", "Chapter One"),
        ("alice", "“Run,” she said."),
        ("narrator", "It rained."),
        ("narrator", "Chapter Two"),
        ("narrator", "He cast [Fireball]."),
        ("bob", "Ha!"),
    ]
    assert doc.chapters == [(0, "One"), (3, "Two")] and report.unknown == {"[Fireball]": 1}
    again, _ = read_cast(path, make_reading(CAST))  # a book without tags: read as before
    assert again.to_json() == plain.to_json()


def test_markup_and_dialogue_in_html_chapters(tmp_path):
    page = tmp_path / "story.html"
    page.write_text(
        "<html><head><title>Story</title></head><body><h1>Story</h1>"
        "<h2>Part One</h2><p>[darcy] “Good day.” [/] He left.</p><p>“Stay,” she said.</p>"
        "<h2>Part Two</h2><p>[Mr. Darcy] I shall.</p></body></html>"
    )
    doc, _ = read_cast(page, make_reading(CAST, dialogue_voice="alice"))
    assert labelled(doc) == [
        ("narrator", "Story"),
        ("narrator", "Part One"),
        ("darcy", "“Good day.”"),
        ("narrator", "He left."),
        ("alice", "“Stay,”"),
        ("narrator", "she said."),
        ("narrator", "Part Two"),
        ("darcy", "I shall."),
    ]
    assert doc.chapters == read_any(page).chapters and [t for _, t in doc.chapters] == ["Story", "Part One", "Part Two"]


def test_importers_are_refused_for_books_that_are_not_text(tmp_path):
    path = make_epub3(tmp_path / "book.epub")
    with pytest.raises(BadInput, match=r"--markup e2a reads text files, and .*book.epub is read as epub"):
        read_cast(path, make_reading(CAST, markup="e2a"))
