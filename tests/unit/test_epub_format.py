"""`--format epub` without a worker: an EPUB output implies `--readalong epub` and an EPUB document kept whole;
what needs an audio file beside it is refused naming the option as the caller spells it (CLI or form); the
output's audio is an .m4a made for the package and never placed; every surface offers the format."""

from __future__ import annotations

from pathlib import Path

import pytest
from narrate.jobs.api.batch import output_paths
from narrate.jobs.api.fields import HTTP, FieldError
from narrate.jobs.api.options import Options
from narrate.jobs.errors import BadInput
from narrate.jobs.outputs.outputs import audio_of, check_format
from narrate.jobs.web.submitting import FORMAT_NAMES


def test_an_epub_output_implies_a_read_along_epub():
    plain = Options.make(book={"subtitles": "vtt"}, word_timings="auto")
    assert plain.for_output("book.m4b") is plain and plain.for_output(None) is plain
    made = plain.for_output(Path("out/Book.EPUB"))
    assert made.book.readalong == "epub" and made.reading.keep_source and made.book.subtitles == "vtt"
    assert made.word_timings == "auto" and made.for_output("book.epub") == made
    assert Options.from_json(made.to_json()) == made  # a schedule keeps it so


@pytest.mark.parametrize(
    ("given", "field", "cli", "form"),
    [
        ({"book": {"split": "chapters+book"}}, "split", "not with --split", "not with split"),
        ({"book": {"max_part_hours": 2.0}}, "max_part_hours", "--max-part-hours", "max_part_hours"),
        ({"book": {"readalong": "epub,w3c"}}, "readalong", "--readalong w3c", "readalong w3c"),
        ({"feed": "news"}, "feed", "a podcast feed's episodes are audio files", "audio files"),
    ],
)
def test_what_needs_an_audio_file_beside_it_is_refused(given, field, cli, form):
    with pytest.raises(FieldError) as refused:
        Options.make(**given).for_output("book.epub")
    assert refused.value.param == field and cli in str(refused.value)
    assert str(refused.value).startswith("an EPUB output (--format epub)")
    with pytest.raises(FieldError) as refused:
        Options.make(**given).for_output("book.epub", HTTP)
    assert refused.value.param == field and form in str(refused.value) and "--" not in str(refused.value)


def test_the_format_is_offered_everywhere_and_its_audio_is_never_placed(tmp_path):
    assert check_format("b.epub") == ".epub" and "epub" in FORMAT_NAMES
    with pytest.raises(BadInput, match=r"use one of .*\.epub"):
        check_format("b.docx")
    assert audio_of(Path("/o/b.epub")) == Path("/o/b.m4a") and audio_of(Path("/o/b.mp3")) == Path("/o/b.mp3")
    assert output_paths([Path("a.md"), Path("b.txt")], None, "epub", tmp_path) == [
        tmp_path / "a.epub",
        tmp_path / "b.epub",
    ]
    with pytest.raises(BadInput, match="is a file name; give a directory"):
        output_paths([Path("a.md"), Path("b.txt")], tmp_path / "x.epub", None, tmp_path)
