"""`narrate chapters DOC`: what would be read, chapter by chapter, before anything is queued."""

from __future__ import annotations

import json
from pathlib import Path

import click
from narrate.cli.common import fail, reading_from, reading_options
from narrate.jobs.counts import count
from narrate.jobs.documents.readers import read_any
from narrate.jobs.documents.readers.summary import summarize
from narrate.jobs.errors import NarrateError
from narrate.jobs.humanize import clock


@click.command()
@click.argument("document", type=click.Path(path_type=Path))
@reading_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: the book and its chapters.")
def chapters(document, input_format, include_front_matter, chapters, as_json) -> None:
    """Show DOCUMENT's chapters as they would be read: title, sentences, estimated duration and
    first words (with --chapters, only those: as `submit --chapters` would read it). Reads the
    file only: no server, nothing queued."""
    try:
        doc = read_any(document, reading_from(input_format, include_front_matter, chapters))
    except NarrateError as e:
        raise fail(e) from None
    items = summarize(doc)
    total = sum(c.seconds for c in items)
    if as_json:
        meta = doc.meta
        book: dict[str, object] = {
            "title": doc.title,
            "author": meta.author if meta else "",
            "language": meta.language if meta else "",
        }
        book |= {"sentences": len(doc.sentences), "seconds": round(total, 1), "has_cover": bool(meta and meta.cover)}
        click.echo(json.dumps(book | {"chapters": [c.to_json() for c in items]}, ensure_ascii=False))
        return
    author = f" by {doc.meta.author}" if doc.meta and doc.meta.author else ""
    size = f"{count(len(items), 'chapter')}, {count(len(doc.sentences), 'sentence')}"
    click.echo(f"{doc.title}{author}: {size}, about {clock(total)}")
    for c in items:  # numbered as in the whole book, with --chapters too
        click.echo(f"{c.number:>3}. {c.title}  ({count(c.sentences, 'sentence')}, {clock(c.seconds)})")
        click.echo(f"     {c.first_words}")
