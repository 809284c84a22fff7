"""`narrate export JOB --library DIR`: a finished book as a folder of an audiobook library."""

from __future__ import annotations

import json
from pathlib import Path

import click
from narrate.cli.common import one_line_errors, settings_from_env
from narrate.jobs.api.library import export_book
from narrate.jobs.library.layout import LAYOUTS
from narrate.jobs.server.connection import Connection


@click.command()
@click.argument("job_id")
@click.option(
    "--library", type=click.Path(path_type=Path), default=None, help="The library's folder (default: NARRATE_LIBRARY)."
)
@click.option(
    "--layout",
    type=click.Choice(LAYOUTS),
    default="abs",
    show_default=True,
    help="abs: Author/[Series/]Vol N - Year - Title {Narrator}; plex: Author/Title; flat: Title",
)
@click.option(
    "--abs-url",
    default=None,
    metavar="URL",
    help="Also tell this Audiobookshelf server (token: NARRATE_ABS_TOKEN): scan its library after the "
    "export, or upload the book when no --library is given. Default: NARRATE_ABS_URL.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: folder, files, what happened.")
@one_line_errors
def export(job_id, library, layout, abs_url, as_json) -> None:
    """Put finished job JOB_ID's book in an audiobook library: its audio (tags agreeing with the folder),
    subtitles, cover, desc.txt, reader.txt, metadata.opf and Audiobookshelf's metadata.json, in a folder
    that appears whole. Run it on the host that wrote the output."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        done, told = export_book(conn.redis, settings, job_id, library, layout, abs_url)
    if as_json:
        shown = {"folder": str(done.folder), "files": done.files, "note": done.note} if done else {}
        click.echo(json.dumps({**shown, "audiobookshelf": told}))
        return
    if done is not None:
        click.echo(f"{done.note}: {done.folder}")
    if told is not None:
        click.echo(told)
