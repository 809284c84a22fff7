"""`--chapters 1-3,5`: only some chapters of a document are read, numbered as `narrate chapters`
lists them (the text before the first chapter is chapter 1); a bad value or a chapter the document
does not have is one line, with nothing read further or enqueued."""

from __future__ import annotations

import json

import pytest
from helpers.cli import invoke as narrate
from narrate.jobs.api.options import Options
from narrate.jobs.documents.readers import ReadOptions, read_any
from narrate.jobs.documents.readers.summary import summarize
from narrate.jobs.documents.selection import check_chapters, keep_chapters
from narrate.jobs.errors import BadInput

BOOK = (
    "Opening words come first.\n\n# The Storm\n\nRain fell. Wind rose.\n\n# The Calm\n\nMorning came.\n\n"
    "It was calm.\n\n# The End\n\nThey slept.\n"
)


@pytest.fixture
def book(tmp_path):
    path = tmp_path / "book.md"
    path.write_text(BOOK)
    return path


@pytest.mark.parametrize(
    ("spec", "numbers"),
    [("2", (2,)), ("1-3,5", (1, 2, 3, 5)), (" 3 - 4 , 1 ", (1, 3, 4)), ("2,2,1-2", (1, 2)), ("", ()), (None, ())],
)
def test_chapter_numbers_and_ranges(spec, numbers):
    assert check_chapters(spec) == numbers


@pytest.mark.parametrize("spec", ["0", "3-1", "a", "1-", "-2", "1,,2", "1.5", "2-100001"])
def test_a_bad_chapters_value_is_one_line(spec):
    with pytest.raises(BadInput, match="--chapters") as e:
        check_chapters(spec)
    assert "\n" not in str(e.value)


def test_only_the_chosen_chapters_are_read_under_their_titles(book):
    whole = read_any(book)
    assert [c.title for c in summarize(whole)] == ["book", "The Storm", "The Calm", "The End"]
    two = read_any(book, ReadOptions(chapters=(3,)))
    assert two.sentences == ["The Calm", "Morning came.", "It was calm."]
    assert [c.title for c in summarize(two)] == ["The Calm"]
    some = read_any(book, ReadOptions(chapters=(1, 4)))
    assert some.sentences == ["Opening words come first.", "The End", "They slept."]
    assert [c.title for c in summarize(some)] == ["book", "The End"]
    assert read_any(book, ReadOptions(chapters=(1, 2, 3, 4))) == whole  # every chapter: the document as it is


def test_languages_and_voices_follow_the_kept_paragraphs(book):
    doc = read_any(book)
    labels = [[f"v{i}"] * len(p) for i, p in enumerate(doc.paragraphs)]
    langs = [f"l{i}" for i in range(len(doc.paragraphs))]
    from dataclasses import replace

    kept = keep_chapters(replace(doc, voices=labels, languages=langs), (3,), "book.md")
    first = [i for i, p in enumerate(doc.paragraphs) if p == kept.paragraphs[0]][0]
    assert kept.languages == langs[first : first + len(kept.paragraphs)]
    assert kept.voices == labels[first : first + len(kept.paragraphs)]


def test_a_chapter_the_document_does_not_have_names_the_count(book):
    with pytest.raises(BadInput, match=r"--chapters 7: document .*book.md has 4 chapters"):
        read_any(book, ReadOptions(chapters=(2, 7)))


def test_options_keep_the_chapters_and_leave_the_json_as_before_without_them():
    made = Options.make(chapters="2-3")
    assert made.reading.chapters == (2, 3)
    assert Options.from_json(json.loads(json.dumps(made.to_json()))) == made
    assert "chapters" not in Options.make().to_json()["reading"]  # the same JSON as before the option existed


def test_the_commands_take_chapters(env, book):
    shown = narrate(env, "chapters", str(book), "--chapters", "2,4", "--json")
    assert shown.returncode == 0, shown.stderr
    assert [c["title"] for c in json.loads(shown.stdout)["chapters"]] == ["The Storm", "The End"]
    for args in (
        ["chapters", str(book), "--chapters", "9"],
        ["submit", str(book), "--voice", "x.wav", "--chapters", "0"],
    ):
        bad = narrate(env, *args)
        assert bad.returncode == 1 and "--chapters" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    sched = narrate(
        env,
        "schedule",
        "add",
        "s",
        "--cron",
        "0 2 * * *",
        "--watch",
        str(book.parent),
        "--voice",
        "x.wav",
        "--chapters",
        "2",
    )
    assert sched.returncode == 2 and "No such option '--chapters'" in sched.stderr  # a schedule reads a folder


def test_kept_chapters_keep_the_books_own_numbers(env, book):
    """`--chapters 2,4` lists chapters 2 and 4 (not 1 and 2), in the text and the JSON, and the
    document a job stores says which of the book's chapters it holds."""
    shown = narrate(env, "chapters", str(book), "--chapters", "2,4")
    assert shown.returncode == 0, shown.stderr
    listed = [line.split("(")[0].strip() for line in shown.stdout.splitlines()[1::2]]
    assert listed == ["2. The Storm", "4. The End"], shown.stdout
    shown = narrate(env, "chapters", str(book), "--chapters", "2,4", "--json")
    assert [(c["number"], c["title"]) for c in json.loads(shown.stdout)["chapters"]] == [
        (2, "The Storm"),
        (4, "The End"),
    ]
    whole = narrate(env, "chapters", str(book), "--json")
    assert [c["number"] for c in json.loads(whole.stdout)["chapters"]] == [1, 2, 3, 4]
    from narrate.jobs.documents.documents import Document

    kept = read_any(book, ReadOptions(chapters=(1, 3)))
    assert kept.chapter_numbers == [1, 3]
    assert Document.from_json(json.loads(json.dumps(kept.to_json()))) == kept
    assert "chapter_numbers" not in read_any(book).to_json()  # a whole book's JSON is as before
