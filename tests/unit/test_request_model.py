"""The request is declared once (jobs/api/fields.py): the CLI's options of submit, run and schedule
add and the HTTP form of POST /v1/narrations are generated from it with the same bounds, choices and
descriptions; errors name the field as the caller spelled it; the job's numbers (seed, frame cap,
pauses) are request fields that a schedule keeps; and the JSON that names outputs and jobs is what it
was before the model existed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
import pytest
from narrate.cli.main import main
from narrate.jobs.api import fields
from narrate.jobs.api.fields import CLI, HTTP, FieldError, RequestFields
from narrate.jobs.api.options import Options
from narrate.jobs.web import submitting
from narrate.jobs.web.uploads import Upload
from pydantic import ValidationError


def _params(command: str) -> dict[str, click.Option]:
    cmd = main
    for part in command.split():
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[part]
    return {p.name: p for p in cmd.params if isinstance(p, click.Option) and p.name}


@pytest.mark.parametrize(
    ("command", "queued", "without"), [("submit", True, ()), ("run", False, ()), ("schedule add", True, ("chapters",))]
)
def test_each_command_offers_the_model_fields_with_the_models_bounds(command, queued, without):
    """Every field a command offers, with the model's help and bounds (`schedule add` reads a folder of documents:
    no --chapters, which picks chapters of one)."""
    params = _params(command)
    want = {n for n in RequestFields.model_fields if CLI in fields.where(n) or (queued and "queued" in fields.where(n))}
    assert not set(without) & set(params)
    want -= set(without)
    assert want <= set(params), sorted(want - set(params))
    assert not queued or {"priority", "fan_out", "feed"} <= want
    assert queued or not {"priority", "fan_out", "feed"} & set(params)
    for name in want:
        opt, info = params[name], RequestFields.model_fields[name]
        assert fields.flag(name) in opt.opts and opt.help == info.description
        base, low, high = fields.base_type(name)
        if base is int:
            assert isinstance(opt.type, click.IntRange) and (opt.type.min, opt.type.max) == (low, high), name
        elif base is bool:
            assert opt.is_flag, name
        elif getattr(base, "__args__", None) and not opt.metavar:
            assert isinstance(opt.type, click.Choice) and tuple(opt.type.choices) == base.__args__, name


def test_the_form_offers_the_model_fields_with_the_models_bounds():
    props = submitting.FIELDS
    for name in RequestFields.model_fields:
        if HTTP not in fields.where(name):
            assert name not in props, name
            continue
        base, low, high = fields.base_type(name)
        assert props[name]["description"], name
        if base is int:
            assert (props[name]["type"], props[name]["minimum"], props[name]["maximum"]) == ("integer", low, high)
        elif base is Path:
            assert props[name]["format"] == "binary"
    assert props["quant"]["enum"] == ["bf16", "4bit", "6bit", "8bit", "float32"]
    assert props["max_part_hours"]["exclusiveMinimum"] == 0
    assert not {"overwrite", "library", "library_layout", "abs_url"} & set(props)  # paths of the server: CLI only


@pytest.mark.parametrize(
    ("given", "param", "cli_says", "http_says"),
    [
        ({"sentence_pause_ms": -5}, "sentence_pause_ms", "--sentence-pause '-5'", "sentence_pause_ms '-5'"),
        ({"chapter_pause_ms": "x"}, "chapter_pause_ms", "--chapter-pause 'x'", "chapter_pause_ms 'x'"),
        ({"max_frames": 0}, "max_frames", "--max-frames '0': give a whole number from 1 to", "max_frames '0'"),
        ({"max_part_hours": 0}, "max_part_hours", "--max-part-hours", "max_part_hours"),
        ({"year": "soon"}, "year", "--year 'soon'", "year 'soon'"),
        ({"loudness": "-99"}, "loudness", "--loudness '-99'", "loudness '-99'"),
        ({"fan_out": "often"}, "fan_out", "--fan-out 'often'", "fan_out 'often'"),
        ({"quant": "3bit"}, "quant", "--quant '3bit': use 'bf16'", "quant '3bit': use 'bf16'"),
        ({"library_layout": "tree"}, "library_layout", "--layout 'tree'", "library_layout 'tree'"),
        ({"chapters": "0-x"}, "chapters", "--chapters", "chapters"),
        ({"language": "klingon"}, "language", "--language: unknown language 'klingon'", "language: unknown"),
        ({"feed": "bad/name"}, "feed", "--feed: feed name 'bad/name' is not valid", "feed: feed name"),
        ({"subtitles": "ass"}, "subtitles", "--subtitles: unknown subtitle format 'ass'", "subtitles: unknown"),
        ({"readalong": "pdf"}, "readalong", "--readalong: unknown format 'pdf'", "readalong: unknown format"),
        ({"title": "a\nb"}, "title", "--title 'a\\nb': holds a control character", "title 'a\\nb'"),
        ({"abs_url": "ftp://x"}, "abs_url", "--abs-url 'ftp://x'", "abs_url 'ftp://x'"),
        ({"word_timings": "book.txt"}, "word_timings", "--word-timings: aligner 'book.txt'", "word_timings: aligner"),
        (
            {"readalong": "manifest", "split": "chapters"},
            "readalong",
            "--readalong: a read-along book plays the whole book's file; not with --split chapters or --max-part-hours",
            "readalong: a read-along book plays the whole book's file; not with split chapters or max_part_hours",
        ),
        ({"readalong": "epub", "max_part_hours": 2}, "readalong", "--readalong:", "readalong:"),
    ],
)
def test_an_error_names_the_field_as_the_caller_spelled_it(given, param, cli_says, http_says):
    with pytest.raises(FieldError) as e:
        Options.from_fields(RequestFields.parse(given, CLI))
    assert e.value.param == param and cli_says in str(e.value), str(e.value)
    with pytest.raises(FieldError) as e:
        Options.from_fields(RequestFields.parse(given, HTTP), HTTP)
    said = str(e.value)
    assert e.value.param == param and http_says in said and "--" not in said, said


def test_an_unknown_field_is_refused():
    with pytest.raises(Exception, match="unknown option 'speed'"):
        RequestFields.parse({"speed": 2}, CLI)


def test_the_jobs_numbers_travel_in_the_request_and_leave_its_json_as_it_was_when_unset():
    plain = Options.make()
    assert plain.knobs() == dict.fromkeys(fields.KNOBS) and not set(fields.KNOBS) & set(plain.to_json())
    given = Options.make(seed=5, sentence_pause_ms=100)
    assert given.to_json()["seed"] == 5 and given.to_json()["sentence_pause_ms"] == 100
    assert "max_frames" not in given.to_json() and not set(fields.KNOBS) & set(given.to_json(knobs=False))
    assert Options.from_json(given.to_json()) == given  # a schedule keeps them


def test_the_http_output_name_is_what_it_was_before_the_model(tmp_path):
    """Names computed by the code before the request model (the same request gets the same output and
    job id across the upgrade)."""
    doc = tmp_path / "book.txt"
    doc.write_text("A fixed document. Two sentences.")
    upload = Upload(**{f.name: {"name": "book.txt", "path": doc}.get(f.name) for f in dataclasses.fields(Upload)})

    class Ref:
        spec_voice, instruct = "a" * 64, None

    class Choice:
        ref = Ref()

    opts = Options.make(
        quant="8bit", book={"subtitles": "srt", "title": "T"}, fan_out="none", seed=5, sentence_pause_ms=100
    )
    assert submitting.output_name(upload, Choice(), opts, ".mp3") == "narrations/book-1c855ed636.mp3"
    plain = Options.make()
    assert submitting.output_name(upload, Choice(), plain, ".m4b") == "narrations/book-be8dcf426a.m4b"


def test_a_forged_job_spec_is_checked_strictly_with_the_same_bounds():
    from narrate.jobs.book.spec import BadSpec, JobSpec
    from narrate.jobs.settings import MAX_PAUSE_MS

    base = JobSpec(document="d", voice="a" * 64, output="o.mp3").to_json()
    for name, value in [
        ("sentence_pause_ms", MAX_PAUSE_MS + 1),
        ("seed", "5"),
        ("seed", True),
        ("max_frames", 1.5),
        ("library", "relative/dir"),
        ("abs_url", "ftp://x"),
        ("library_layout", "tree"),
    ]:
        with pytest.raises(BadSpec, match=name):
            JobSpec.from_json(base | {name: value})
    JobSpec.from_json(base | {"sentence_pause_ms": MAX_PAUSE_MS, "loudness": -16, "library": "/srv/books"})
    with pytest.raises(ValidationError, match="seed"):  # building one is checking it: no unchecked spec exists
        JobSpec(document="d", voice="a" * 64, output="o.mp3", seed=True)
    with pytest.raises(ValidationError, match="designed voice"):
        JobSpec(document="d", voice="design", output="o.mp3", instruct="warm")
