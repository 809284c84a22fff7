"""What the commands share: options, settings from flags and environment, one-line errors, waiting for a job."""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import redis
from narrate.jobs.api import submit as api
from narrate.jobs.api.casting import CastChoice, choose_cast
from narrate.jobs.api.request import Options
from narrate.jobs.audio.bookmeta import SPLITS
from narrate.jobs.cast.reading import MARKUPS
from narrate.jobs.documents.readers import INPUT_FORMATS, ReadOptions
from narrate.jobs.documents.selection import check_chapters
from narrate.jobs.errors import NarrateError
from narrate.jobs.queue.queues import PRIORITIES
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import DEFAULT_MODEL, MAX_FRAMES_CAP, MAX_PAUSE_MS, QUANTS, Settings, default
from narrate.jobs.voices.choice import VoiceChoice

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
    type=click.IntRange(min=1, max=MAX_FRAMES_CAP),
    default=None,
    help=f"Cap on codec frames per sentence (NARRATE_MAX_FRAMES, default {default('max_frames')}).",
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


def voice_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """--voice (repeatable: the narrator, and NAME=VOICE for a cast), --instruct and the cast's
    options (--cast, --markup, --dialogue-voice, --strict), passed to the command as `voice` (a
    tuple), `instruct` and `cast` (a dict); read them with ``choose_voices``."""
    opts = [
        click.option("--voice", "voice", multiple=True, metavar="[NAME=]VOICE",
                     help="The narrator: a voice sample file (1-60 s of speech), a saved voice (narrate voice list) "
                     "or, with a CustomVoice --model, a preset speaker (ryan, aiden, ...). Again as NAME=VOICE "
                     "(or NAME:VARIANT=VOICE) for each voice of a cast, which [NAME] tags in the text switch to."),
        click.option("--instruct", default=None, metavar="TEXT",
                     help="How a preset narrator speaks, e.g. 'calm, warm narrator' (1.7B CustomVoice models; "
                     "others ignore it)."),
        click.option("--cast", "cast_file", type=click.Path(path_type=Path), default=None, metavar="CAST.TOML",
                     help="The cast: voices, aliases and seeds (docs/cast.md)."),
        click.option("--markup", type=click.Choice(MARKUPS, case_sensitive=False), default=None,
                     help="How the text names its voices: narrate's [name] tags (default) or another tool's."),
        click.option("--dialogue-voice", default=None, metavar="NAME|VOICE",
                     help="Read quoted speech in this voice (a cast member, or a voice), the rest by the narrator."),
        click.option("--strict", is_flag=True, help="A [tag] that names nobody in the cast is an error."),
    ]  # fmt: skip
    for opt in reversed(opts):
        f = opt(f)
    return f


CAST_OPTION_NAMES = ("cast_file", "markup", "dialogue_voice", "strict")


def choose_voices(settings: Settings, kw: dict, options: Options,
                  conn: Connection | None = None) -> tuple[VoiceChoice, CastChoice | None]:  # fmt: skip
    """Pop --voice, --instruct and the cast's options out of a command's keyword arguments: (the
    narrator's voice, the cast or None). Files need no server; a name is looked up in the library on
    `conn`, or on a connection opened for it. Warnings go to stderr."""
    voices, instruct = tuple(kw.pop("voice")), kw.pop("instruct")
    cast_opts = {k: kw.pop(k) for k in CAST_OPTION_NAMES}
    if not voices and cast_opts["cast_file"] is None:
        raise click.UsageError(
            "Missing option '--voice' (the narrator: a sample file, a saved voice or a preset speaker), or --cast",
            click.get_current_context(silent=True),
        )
    files_only = all(os.path.lexists(os.path.expanduser(v.partition("=")[2] or v)) for v in voices)
    if conn is None and not files_only:
        with Connection(settings) as c:
            return _choose(settings, voices, instruct, cast_opts, options, c)
    return _choose(settings, voices, instruct, cast_opts, options, conn)


def _choose(settings: Settings, voices: tuple[str, ...], instruct: str | None, cast_opts: dict, options: Options,
            conn: Connection | None) -> tuple[VoiceChoice, CastChoice | None]:  # fmt: skip
    narrator, cast = choose_cast(conn.redis if conn is not None else None, settings, voices, options, instruct,
                                 **cast_opts)  # fmt: skip
    every = [narrator, *(cast.voices.values() if cast else ())]
    for warning in dict.fromkeys(w for c in every for w in c.warnings):
        click.echo(f"warning: {warning}", err=True)
    return narrator, cast


def choose_voice(settings: Settings, voice: str, options: Options, instruct: str | None,
                 conn: Connection | None = None) -> VoiceChoice:  # fmt: skip
    """One voice (`narrate voice preview`): a file, a saved voice or a preset speaker."""
    kw = {"voice": (voice,), "instruct": instruct, **dict.fromkeys(CAST_OPTION_NAMES)}
    kw["strict"] = False
    return choose_voices(settings, kw, options, conn)[0]


def reading_options(f):
    """--input-format, --include-front-matter and --chapters (read them with ``reading_from``)."""
    f = click.option(
        "--chapters",
        default=None,
        metavar="1-3,5",
        help="Read only these chapters, numbered as `narrate chapters DOC` lists them (default: all).",
    )(f)
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


priority_option = click.option(
    "--priority", type=click.Choice(PRIORITIES), default="normal", show_default=True, help="Queue priority."
)
fan_out_option = click.option(
    "--fan-out", "fan_out", default=None, metavar="chapters|N|none",
    help="Spread the book over the worker hosts: a job per chapter, per N minutes of audio (cut at paragraph ends), "
    "or none. Default: chapters when it has chapters and more than one worker host is registered, else none.",
)  # fmt: skip


feed_option = click.option(
    "--feed", default=None, metavar="NAME",
    help="Put the narration in podcast feed NAME (made on first use; `narrate feed show NAME` prints its URL).",
)  # fmt: skip


library_option = click.option(
    "--library", type=click.Path(path_type=Path), default=None,
    help="Export the finished book into this audiobook library (as `narrate export`: on the worker's host; "
    "default: NARRATE_LIBRARY).",
)  # fmt: skip
layout_option = click.option(
    "--layout", type=click.Choice(("abs", "plex", "flat")), default="abs", show_default=True,
    help="The library's layout: abs (Audiobookshelf), plex, flat.",
)  # fmt: skip


abs_url_option = click.option(
    "--abs-url", default=None, metavar="URL",
    help="Tell this Audiobookshelf server about the finished book (the worker's NARRATE_ABS_TOKEN): a scan after "
    "the --library export, else an upload. Default: NARRATE_ABS_URL.",
)  # fmt: skip


def request_options(queued: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Every option of a request (narrate.jobs.api.request.Options) and the job's settings (seed,
    frame cap, pauses), the same for `submit`, `run` and `schedule add`; `queued`: also --priority and
    --fan-out (`run` has its own private queue and one host). Read them with ``options_from``."""

    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        opts = [model_option, quant_option, seed_option, max_frames_option]
        opts += [priority_option, fan_out_option, feed_option] if queued else []
        opts += [overwrite_option, language_option, lexicon_option, library_option, layout_option, abs_url_option]
        f = reading_options(book_options(f))
        for opt in reversed(opts):
            f = opt(f)
        return f

    return deco


REQUEST_OPTION_NAMES = ("model", "quant", "overwrite", "language", "lexicon", "input_format", "include_front_matter",
                        "chapters")  # fmt: skip


def options_from(kw: dict) -> tuple[Options, dict]:
    """Pop the options of ``request_options`` out of a command's keyword arguments: (the request's
    Options, checked by Options.make; the settings overrides for seed, frame cap and pauses). Raises
    BadInput naming the first bad option."""
    book, pauses = split_book_options(kw)
    overrides = {"seed": kw.pop("seed"), "max_frames": kw.pop("max_frames"), **pauses}
    named = {k: kw.pop(k) for k in REQUEST_OPTION_NAMES}
    queued = {k: kw.pop(k) for k in ("priority", "fan_out", "feed") if k in kw}
    env = settings_from_env()
    library, abs_url = kw.pop("library") or env.library, kw.pop("abs_url") or env.abs_url
    made = Options.make(**named, **queued, book=book, library=library, library_layout=kw.pop("layout"), abs_url=abs_url)
    return made, overrides


def reading_from(input_format: str | None, include_front_matter: bool, chapters: str | None = None) -> ReadOptions:
    return ReadOptions(input_format.lower() if input_format else None, include_front_matter,
                       chapters=check_chapters(chapters))  # fmt: skip


def settings_from_env(**overrides: object) -> Settings:
    try:
        return Settings.from_env(**overrides)
    except (NarrateError, redis.RedisError) as e:
        raise click.ClickException(str(e)) from None


def one_line_errors(f: Callable[..., Any]) -> Callable[..., Any]:
    """A command's NarrateError (bad input, a job not found, ...) or refused Redis command ends it
    with one line on stderr and exit status 1 (click's ClickException), never a traceback."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except (NarrateError, redis.RedisError) as e:
            raise fail(e) from None

    return wrapper


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


def _pause_help(what: str, name: str) -> str:
    return f"Silence {what} in ms (NARRATE_{name.upper()}, default {default(name)})."


def book_options(f):
    """Output options shared by submit and run: pauses, loudness, subtitles, tags, cover, split."""
    opts = [
        click.option("--sentence-pause", type=click.IntRange(min=0, max=MAX_PAUSE_MS), default=None, metavar="MS",
                     help=_pause_help("between sentences", "sentence_pause_ms")),
        click.option("--paragraph-pause", type=click.IntRange(min=0, max=MAX_PAUSE_MS), default=None, metavar="MS",
                     help=_pause_help("between paragraphs", "paragraph_pause_ms")),
        click.option("--chapter-pause", type=click.IntRange(min=0, max=MAX_PAUSE_MS), default=None, metavar="MS",
                     help=_pause_help("before a chapter", "chapter_pause_ms")),
        click.option("--loudness", default=None, metavar="LUFS|off",
                     help="Integrated loudness target (default -19; -16 for a louder book), or off."),
        click.option("--subtitles", default=None, metavar="srt,vtt,json",
                     help="Also write subtitles / a timing manifest beside the audio, with its stem."),
        click.option("--title", default=None, help="Title tag (default: the document's, or its file name)."),
        click.option("--series", default=None, metavar='"NAME #N"',
                     help="Series and position (default: an EPUB's own): tags and a library export's folder."),
        click.option("--narrator", default=None, help="Narrator tag."),
        click.option("--author", default=None, help="Author tag (default: the document's, if it has one)."),
        click.option("--year", default=None, help="Year tag."),
        click.option("--cover", type=click.Path(path_type=Path), default=None, help="Cover art (JPEG or PNG)."),
        click.option("--split", type=click.Choice(SPLITS), default=None,
                     help="One file per chapter (in a folder named after the output), instead of or with the book."),
        click.option("--max-part-hours", type=float, default=None, metavar="H",
                     help="Write the book file in parts of at most H hours, cut at chapter boundaries."),
    ]  # fmt: skip
    for opt in reversed(opts):
        f = opt(f)
    return f


BOOK_OPTION_NAMES = ("loudness", "subtitles", "title", "series", "narrator", "author", "year", "cover", "split",
                     "max_part_hours")  # fmt: skip
PAUSE_SETTINGS = {"sentence_pause": "sentence_pause_ms", "paragraph_pause": "paragraph_pause_ms",
                  "chapter_pause": "chapter_pause_ms"}  # fmt: skip


def split_book_options(kw: dict) -> tuple[dict, dict]:
    """Pop the book options out of a command's keyword arguments: (BookOptions.make arguments,
    settings overrides for the pauses)."""
    book = {name: kw.pop(name) for name in BOOK_OPTION_NAMES}
    pauses = {setting: kw.pop(opt) for opt, setting in PAUSE_SETTINGS.items()}
    return book, pauses
