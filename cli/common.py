"""What the commands share: options, settings from flags and environment, one-line errors, waiting for a job."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import redis
from narrate.jobs.api import submit as api
from narrate.jobs.documents.readers import INPUT_FORMATS, ReadOptions
from narrate.jobs.errors import NarrateError
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import DEFAULT_MODEL, QUANTS, Settings

quant_option = click.option(
    "--quant",
    default=None,
    metavar="|".join(QUANTS),
    help="Quantization (default: NARRATE_QUANT, else by model).",
)
model_option = click.option(
    "--model",
    default=None,
    help=f"Hugging Face id or local checkpoint dir (NARRATE_MODEL on the worker, else {DEFAULT_MODEL}, "
    "downloaded from the Hugging Face hub on first use).",
)
seed_option = click.option(
    "--seed", type=click.IntRange(min=0), default=None, help="Sampling seed of the job (NARRATE_SEED, default 0)."
)
max_frames_option = click.option(
    "--max-frames",
    type=click.IntRange(min=1),
    default=None,
    help="Cap on codec frames per sentence (NARRATE_MAX_FRAMES, default 2048).",
)
overwrite_option = click.option(
    "--overwrite", is_flag=True, help="Replace a file at the output path that narrate did not write."
)
language_option = click.option(
    "--language",
    default="auto",
    show_default=True,
    help="The document's language: en, zh, ja, ko, de, fr, ru, pt, es, it (or its name); auto detects it.",
)
lexicon_option = click.option(
    "--lexicon",
    type=click.Path(path_type=Path),
    default=None,
    help="Pronunciations: a file of 'word = spoken form' lines (whole words, case-sensitive; # comments).",
)
voice_option = click.option(
    "--voice", required=True, type=click.Path(path_type=Path), help="Voice sample (1-60 s of speech)."
)


def reading_options(f):
    """--input-format and --include-front-matter, passed to the command as `reading` (ReadOptions)."""
    f = click.option(
        "--include-front-matter",
        is_flag=True,
        help="EPUB: also read the cover, contents and copyright pages (skipped by default).",
    )(f)
    f = click.option(
        "--input-format",
        type=click.Choice(INPUT_FORMATS, case_sensitive=False),
        default=None,
        help="Read the documents as this format (default: by extension; unknown extensions are text).",
    )(f)
    return f


def reading_from(input_format: str | None, include_front_matter: bool) -> ReadOptions:
    return ReadOptions(input_format.lower() if input_format else None, include_front_matter)


def settings_from_env(**overrides: object) -> Settings:
    try:
        return Settings.from_env(**overrides)
    except (NarrateError, redis.RedisError) as e:
        raise click.ClickException(str(e)) from None


def fail(e: Exception) -> click.ClickException:
    if isinstance(e, redis.RedisError):  # e.g. OOM (maxmemory) or MISCONF (its disk is full)
        return click.ClickException(f"the Redis server refused: {str(e).splitlines()[0]}")
    return click.ClickException(str(e))


UNATTENDED_CHECK_POLLS = 10  # while queued, look for a worker on the job's queue every this many polls


def wait_for(conn: Connection, job_id: str, quiet: bool, poll_s: float = 0.5) -> dict:
    last = None
    hinted = False
    polls = 0
    while True:
        st = api.status(conn.redis, job_id)
        p = st["progress"]
        line = f"{st['status']}: {p.get('done', 0)}/{p.get('total', 0)} sentences"
        if not quiet and line != last:
            click.echo(line, err=True)
            last = line
        if not quiet and not hinted and st["status"] == "queued" and polls % UNATTENDED_CHECK_POLLS == 0:
            name = api.unattended_queue(conn.redis, job_id)
            if name is not None:
                click.echo(f"no worker is taking jobs from queue {name!r}: start one with `narrate worker` "
                           "(in another terminal, or as a service); waiting", err=True)  # fmt: skip
                hinted = True
        polls += 1
        if st["status"] in ("finished", "failed", "canceled", "stopped"):
            return st
        time.sleep(poll_s)


def finish(st: dict, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(st))
    elif st["status"] == "finished":
        click.echo(st["output"])
    if st["status"] != "finished":
        raise click.ClickException(f"job {st['id']} {st['status']}: {st.get('error', '')}")


def book_options(f):
    """Output options shared by submit and run: pauses, loudness, subtitles, tags, cover, split."""
    opts = [
        click.option("--sentence-pause", type=click.IntRange(min=0), default=None, metavar="MS",
                     help="Silence between sentences in ms (NARRATE_SENTENCE_PAUSE_MS, default 250)."),
        click.option("--paragraph-pause", type=click.IntRange(min=0), default=None, metavar="MS",
                     help="Silence between paragraphs in ms (NARRATE_PARAGRAPH_PAUSE_MS, default 750)."),
        click.option("--chapter-pause", type=click.IntRange(min=0), default=None, metavar="MS",
                     help="Silence before a chapter in ms (NARRATE_CHAPTER_PAUSE_MS, default 2000)."),
        click.option("--loudness", default=None, metavar="LUFS|off",
                     help="Integrated loudness target (default -19; -16 for a louder book), or off."),
        click.option("--subtitles", default=None, metavar="srt,vtt,json",
                     help="Also write subtitles / a timing manifest beside the audio, with its stem."),
        click.option("--narrator", default=None, help="Narrator tag."),
        click.option("--author", default=None, help="Author tag (default: the document's, if it has one)."),
        click.option("--year", default=None, help="Year tag."),
        click.option("--cover", type=click.Path(path_type=Path), default=None, help="Cover art (JPEG or PNG)."),
        click.option("--split", type=click.Choice(["chapters", "chapters+book"]), default=None,
                     help="One file per chapter (in a folder named after the output), instead of or with the book."),
        click.option("--max-part-hours", type=float, default=None, metavar="H",
                     help="Write the book file in parts of at most H hours, cut at chapter boundaries."),
    ]  # fmt: skip
    for opt in reversed(opts):
        f = opt(f)
    return f


BOOK_OPTION_NAMES = ("loudness", "subtitles", "narrator", "author", "year", "cover", "split", "max_part_hours")
PAUSE_SETTINGS = {"sentence_pause": "sentence_pause_ms", "paragraph_pause": "paragraph_pause_ms",
                  "chapter_pause": "chapter_pause_ms"}  # fmt: skip


def split_book_options(kw: dict) -> tuple[dict, dict]:
    """Pop the book options out of a command's keyword arguments: (BookOptions.make arguments,
    settings overrides for the pauses)."""
    book = {name: kw.pop(name) for name in BOOK_OPTION_NAMES}
    pauses = {setting: kw.pop(opt) for opt, setting in PAUSE_SETTINGS.items()}
    return book, pauses
