"""What the commands share: options, settings from flags and environment, one-line errors, waiting for a job."""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import click
import redis
from narrate.jobs.api import fields
from narrate.jobs.api import submit as api
from narrate.jobs.api.casting import CastChoice, choose_cast
from narrate.jobs.api.options import Options
from narrate.jobs.cast.reading import MARKUPS
from narrate.jobs.documents.readers import ReadOptions
from narrate.jobs.documents.selection import check_chapters
from narrate.jobs.errors import NarrateError
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings
from narrate.jobs.voices.choice import VoiceChoice


def voice_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """--voice (repeatable: the narrator, and NAME=VOICE for a cast), --instruct and the cast's
    options (--cast, --markup, --dialogue-voice, --strict), passed to the command as `voice` (a
    tuple), `instruct` and `cast` (a dict); read them with ``choose_voices``."""
    opts = [
        click.option(
            "--voice",
            "voice",
            multiple=True,
            metavar="[NAME=]VOICE",
            help="The narrator: a voice sample file (1-60 s of speech), a saved voice (narrate voice list) "
            "or, with a CustomVoice --model, a preset speaker (ryan, aiden, ...). Again as NAME=VOICE "
            "(or NAME:VARIANT=VOICE) for each voice of a cast, which [NAME] tags in the text switch to.",
        ),
        click.option(
            "--instruct",
            default=None,
            metavar="TEXT",
            help="How a preset narrator speaks, e.g. 'calm, warm narrator' (1.7B CustomVoice models; "
            "others ignore it).",
        ),
        click.option(
            "--cast",
            "cast_file",
            type=click.Path(path_type=Path),
            default=None,
            metavar="CAST.TOML",
            help="The cast: voices, aliases and seeds (docs/cast.md).",
        ),
        click.option(
            "--markup",
            type=click.Choice(MARKUPS, case_sensitive=False),
            default=None,
            help="How the text names its voices: narrate's [name] tags (default) or another tool's.",
        ),
        click.option(
            "--dialogue-voice",
            default=None,
            metavar="NAME|VOICE",
            help="Read quoted speech in this voice (a cast member, or a voice), the rest by the narrator.",
        ),
        click.option("--strict", is_flag=True, help="A [tag] that names nobody in the cast is an error."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


CAST_OPTION_NAMES = ("cast_file", "markup", "dialogue_voice", "strict")


def choose_voices(
    settings: Settings, kw: dict, options: Options, conn: Connection | None = None
) -> tuple[VoiceChoice, CastChoice | None]:
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


def _choose(
    settings: Settings,
    voices: tuple[str, ...],
    instruct: str | None,
    cast_opts: dict,
    options: Options,
    conn: Connection | None,
) -> tuple[VoiceChoice, CastChoice | None]:
    narrator, cast = choose_cast(
        conn.redis if conn is not None else None, settings, voices, options, instruct, **cast_opts
    )
    every = [narrator, *(cast.voices.values() if cast else ())]
    for warning in dict.fromkeys(w for c in every for w in c.warnings):
        click.echo(f"warning: {warning}", err=True)
    return narrator, cast


def choose_voice(
    settings: Settings, voice: str, options: Options, instruct: str | None, conn: Connection | None = None
) -> VoiceChoice:
    """One voice (`narrate voice preview`): a file, a saved voice or a preset speaker."""
    kw = {"voice": (voice,), "instruct": instruct, **dict.fromkeys(CAST_OPTION_NAMES)}
    kw["strict"] = False
    return choose_voices(settings, kw, options, conn)[0]


def _option(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The click option of a RequestFields field: its flag, type and bounds, help and default from the model."""
    info = fields.RequestFields.model_fields[name]
    extra = info.json_schema_extra
    assert isinstance(extra, dict)
    base, low, high = fields.base_type(name)
    kw: dict[str, Any] = {"help": info.description, "metavar": extra["metavar"], "show_default": extra["show_default"]}
    kw["default"] = extra["cli_default"] if extra["cli_default"] is not None else info.default
    if base is bool:
        return click.option(fields.flag(name), name, is_flag=True, help=info.description)
    if get_origin(base) is Literal and not extra["metavar"]:  # with a metavar: checked by the model, one line
        kw["type"] = click.Choice(get_args(base), case_sensitive=False)
    elif base is int:
        kw["type"] = click.IntRange(min=low, max=high)
    elif base is float:
        kw["type"] = float
    elif base is Path:
        kw["type"] = click.Path(path_type=Path)
    if extra.get("flag_value") is not None:  # --proof alone, or --proof MODEL
        kw.update(is_flag=False, flag_value=extra["flag_value"])
    return click.option(fields.flag(name), name, **kw)


def _options(names: tuple[str, ...]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            f = _option(name)(f)
        return f

    return deco


READING = ("input_format", "include_front_matter", "chapters")
reading_options = _options(READING)  # --input-format, --include-front-matter, --chapters (``reading_from``)
model_option, quant_option = _option("model"), _option("quant")
seed_option, max_frames_option = _option("seed"), _option("max_frames")


def request_fields(queued: bool, without: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The fields of the request a command offers: `queued` (submit, schedule add) or not (run), less `without`."""
    return tuple(
        n
        for n in fields.RequestFields.model_fields
        if (fields.CLI in fields.where(n) or (queued and fields.QUEUED in fields.where(n))) and n not in without
    )


def request_options(
    queued: bool = True, without: tuple[str, ...] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Every option of a request, generated from the request model (jobs/api/fields.py), the same for
    `submit`, `run` and `schedule add`; `queued`: also --priority, --fan-out and --feed (`run` has its
    own private queue and one host); `without`: fields a command does not offer. Read them with ``options_from``."""
    return _options(request_fields(queued, without))


def options_from(kw: dict) -> Options:
    """Pop the options of ``request_options`` out of a command's keyword arguments: the request's Options,
    checked by the request model, the job's numbers (seed, frame cap, pauses) among them as given (they are
    the request's, never this host's settings). Raises FieldError naming the first bad option as the command
    line spells it."""
    raw = {name: kw.pop(name) for name in fields.RequestFields.model_fields if name in kw}
    env = settings_from_env()
    raw["library"] = raw.get("library") or env.library
    raw["abs_url"] = raw.get("abs_url") or env.abs_url
    return Options.make(**raw)


def reading_from(input_format: str | None, include_front_matter: bool, chapters: str | None = None) -> ReadOptions:
    return ReadOptions(
        input_format.lower() if input_format else None, include_front_matter, chapters=check_chapters(chapters)
    )


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
                click.echo(
                    f"no worker is taking jobs from queue {name!r}: start one with `narrate worker` "
                    "(in another terminal, or as a service); waiting",
                    err=True,
                )
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
