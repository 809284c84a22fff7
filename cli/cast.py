"""`narrate cast DOC`: the cast as it would read a document, before anything is queued."""

from __future__ import annotations

import json
from pathlib import Path

import click
from narrate.cli.common import fail, reading_from, reading_options
from narrate.jobs.cast.declare import build_cast
from narrate.jobs.cast.reading import MARKUPS, make_reading, read_cast
from narrate.jobs.cast.summary import summarize_cast
from narrate.jobs.counts import count
from narrate.jobs.documents.readers import format_of
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.humanize import clock
from narrate.jobs.inputs import read_input
from narrate.jobs.settings import MAX_DOCUMENT_BYTES


@click.command()
@click.argument("document", type=click.Path(path_type=Path))
@click.option("--cast", "cast_file", type=click.Path(path_type=Path), default=None, help="A cast.toml file.")
@click.option(
    "--voice",
    "voices",
    multiple=True,
    metavar="[NAME=]FILE|NAME",
    help="The narrator (a plain voice), or a cast member: alice=FILE|NAME, a variant alice:whisper=FILE. Repeatable.",
)
@click.option(
    "--markup",
    type=click.Choice(MARKUPS, case_sensitive=False),
    default="narrate",
    show_default=True,
    help="The document's markup: narrate's [alice] tags, or another tool's (read as narrate's).",
)
@click.option("--dialogue-voice", default=None, metavar="NAME", help="Read quoted speech in this voice.")
@click.option("--strict", is_flag=True, help="A tag that names nobody in the cast is an error.")
@click.option(
    "--draft",
    type=click.Path(path_type=Path),
    default=None,
    help='Write the text file with tags added where a rule names the speaker ("...," Alice said.), for review.',
)
@reading_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: the voices and what was found.")
def cast(
    document,
    cast_file,
    voices,
    markup,
    dialogue_voice,
    strict,
    draft,
    input_format,
    include_front_matter,
    chapters,
    as_json,
) -> None:
    """Show who reads DOCUMENT: sentences, estimated time and first lines per voice, declared voices
    never used and tags that name nobody. Reads the files only: no server, nothing queued."""
    try:
        members = build_cast(voices, cast_file)
        reading = make_reading(members, markup, dialogue_voice, strict)
        doc, report = read_cast(document, reading, reading_from(input_format, include_front_matter, chapters))
        tagged = _write_draft(document, draft, reading.cast, input_format) if draft is not None else None
    except NarrateError as e:
        raise fail(e) from None
    summary = summarize_cast(doc, reading.cast, report)
    if as_json:
        data: dict[str, object] = {"document": str(document), "title": doc.title, "markup": reading.markup}
        data |= {"dialogue": reading.dialogue} | summary.to_json()
        data |= {"draft": {"path": str(draft), "tagged": tagged}} if draft is not None else {}
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    voices, sentences = count(len(summary.voices), "voice"), count(summary.sentences, "sentence")
    click.echo(f"{doc.title}: {voices}, {sentences}, about {clock(summary.seconds)}")
    for v in summary.voices:
        voice = v.voice or "the job's --voice"
        click.echo(f"  {v.label} ({voice}): {count(v.sentences, 'sentence')}, {clock(v.seconds)}")
        for line in v.first_lines:
            click.echo(f"      {line}")
    if summary.unused:
        shown = ", ".join(f"{label} ({reading.cast.voices[label]})" for label in summary.unused)
        click.echo(f"never used: {shown}")
    if report.unknown:
        click.echo(f"tags that name nobody (read as text): {report.describe()}")
    if draft is not None and tagged is not None:
        click.echo(f"draft: {draft} ({count(tagged, 'quote')} tagged; review it, then narrate it with the same cast)")


def _write_draft(document: Path, out: Path, members, input_format: str | None) -> int:
    from narrate.jobs.cast.draft import draft
    from narrate.jobs.documents.encodings import decode_text

    if format_of(document, input_format) not in ("txt", "md"):
        raise BadInput(f"--draft writes a text file's draft, and {document} is not one: export it as text first")
    if Path(out).exists() and Path(out).resolve() == Path(document).resolve():
        raise BadInput(f"--draft {out} is the document itself: write the draft to another file")
    origin = str(document)
    text = decode_text(read_input(document, f"document {document}", MAX_DOCUMENT_BYTES), origin)
    tagged_text, tagged = draft(text, members)
    try:
        with open(out, "w", encoding="utf-8", newline="") as f:
            f.write(tagged_text)
    except OSError as e:
        raise BadInput(f"--draft {out} cannot be written ({e.strerror or type(e).__name__})") from None
    return tagged
