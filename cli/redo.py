"""`narrate redo`: sentences of a finished book rendered again, or their takes accepted, as a new job that
replaces the book's files (jobs/api/redo_request.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from narrate.cli.common import finish, one_line_errors, settings_from_env, wait_for
from narrate.jobs.api import redo_request as redoing
from narrate.jobs.constraints import MAX_SEED
from narrate.jobs.documents.lexicon import read_lexicon
from narrate.jobs.errors import BadInput
from narrate.jobs.queue.queues import PRIORITIES
from narrate.jobs.server.connection import Connection

MAX_RANGE = 100_000  # sentences one range may name
SHOWN = 10  # sentences the redo's line shows with their text


def numbers(given: tuple[str, ...], what: str = "sentence") -> tuple[int, ...]:
    """`12 40`, `3-5`, `5,9`: sentence numbers (1 first)."""
    out: list[int] = []
    for word in (w for g in given for w in g.split(",") if w.strip()):
        m = re.fullmatch(r"\s*(\d{1,7})\s*(?:-\s*(\d{1,7})\s*)?", word)
        if m is None:
            raise BadInput(f"{what} {word.strip()[:40]!r} is not a number (1 first) or a range like 3-5")
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        if last < first or last - first >= MAX_RANGE:
            raise BadInput(f"{what} range {word.strip()} is not a range of up to {MAX_RANGE} sentences")
        out.extend(range(first, last + 1))
    return tuple(out)


@click.command()
@click.argument("job_id")
@click.argument("sentences", nargs=-1)
@click.option(
    "--seed",
    type=click.IntRange(0, MAX_SEED),
    default=None,
    help="Render the sentences with this seed (default: the next seed of each).",
)
@click.option(
    "--text",
    default=None,
    metavar="TEXT",
    help="The sentence's corrected text (one sentence; the subtitles show it too).",
)
@click.option(
    "--lexicon",
    type=click.Path(path_type=Path),
    default=None,
    metavar="FILE",
    help="Lexicon entries (word = spoken form) for the chosen sentences only.",
)
@click.option(
    "--accept",
    multiple=True,
    metavar="N[,N...]",
    help="Keep these sentences' takes as they are: the proof pass does not flag them again.",
)
@click.option("--flagged", is_flag=True, help="Also every sentence the proof pass left flagged (and not accepted).")
@click.option(
    "--priority", type=click.Choice(PRIORITIES), default="high", show_default=True, help="The redo's queue priority."
)
@click.option("--wait", is_flag=True, help="Wait for the redo to finish, showing progress.")
@click.option("--json", "as_json", is_flag=True, help="Print the redo as JSON.")
@one_line_errors
def redo(job_id, sentences, seed, text, lexicon, accept, flagged, priority, wait, as_json) -> None:
    """Render SENTENCES of finished job JOB_ID again (numbers as its subtitles count them, 1 first: 12 40,
    3-5) with another seed, a corrected --text or --lexicon entries, then stitch the book again from the
    sentence cache. The new job replaces the book's files (each in one rename), takes the old job's place in
    its feeds and library, and `narrate status JOB_ID` says it was superseded. Prints the new job's id."""
    change = redoing.Change(
        sentences=numbers(sentences),
        seed=seed,
        text=text,
        lexicon=read_lexicon(lexicon) if lexicon is not None else None,
        accept=numbers(accept, "--accept"),
        flagged=flagged,
    )
    if lexicon is not None and not change.lexicon:
        raise BadInput(f"lexicon {lexicon} has no entries")
    settings = settings_from_env()
    with Connection(settings) as conn:
        done = redoing.redo(settings, conn.redis, job_id, change, priority)
        _report(done, settings.output_dir, as_json)
        if wait:
            finish(wait_for(conn, done.job.id, quiet=as_json), as_json)


def _report(done: redoing.Redone, root: Path, as_json: bool) -> None:
    if as_json:
        click.echo(
            json.dumps(
                {
                    "id": done.job.id,
                    "redo_of": done.of,
                    "sentences": done.sentences,
                    "accepted": done.accepted,
                    "texts": done.texts,
                    "duplicate": done.duplicate,
                    "note": done.note,
                }
            )
        )
        return
    if done.note:
        click.echo(f"note: {done.note}", err=True)
    said = {"queued": "already queued or running", "done": "already done", "resumed": "resumed"}
    if done.duplicate:
        click.echo(f"the same redo, job {done.job.id}, {said[done.duplicate]}", err=True)
    what = [
        f"sentences {redoing.ranges(done.sentences)} rendered again" if done.sentences else "",
        f"takes {redoing.ranges(done.accepted)} accepted" if done.accepted else "",
    ]
    click.echo(f"redo of {done.of}: {'; '.join(filter(None, what))}", err=True)
    shown = sorted(done.texts)
    for number in shown[:SHOWN]:  # what each number is, so a number counted otherwise is seen at once
        text = done.texts[number]
        click.echo(f"  {number}: {text[:70]}{'...' if len(text) > 70 else ''}", err=True)
    if len(shown) > SHOWN:
        click.echo(f"  and {len(shown) - SHOWN} more", err=True)
    click.echo(done.job.id)
