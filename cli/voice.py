"""`narrate voice ...`: saved voices, preset speakers, previews and designed voices."""

from __future__ import annotations

import json
from pathlib import Path

import click
from narrate.cli.common import (
    choose_voice,
    model_option,
    one_line_errors,
    quant_option,
    settings_from_env,
    wait_for,
)
from narrate.jobs.api import voice_actions as api
from narrate.jobs.api.options import Options
from narrate.jobs.counts import count
from narrate.jobs.server.connection import Connection
from narrate.jobs.voices.clips import MAX_CANDIDATES

text_option = click.option("--text", default=None, metavar="LINE", help="The line to speak (default: a pangram).")
language_option = click.option("--language", default="en", show_default=True, help="The line's language.")
wait_option = click.option("--no-wait", is_flag=True, help="Print the job id and return; fetch the clips later.")


@click.group(name="voice")
def voice_group() -> None:
    """Voices by name: saved samples, a CustomVoice model's preset speakers, voices designed from a description.

    A saved voice is shared by every host of the server; `--voice NAME` takes it wherever a voice is
    taken (submit, run, schedule add). A name is resolved when the job is submitted: renaming or
    removing the voice later never changes a queued job."""


@voice_group.command()
@click.argument("name")
@click.argument("sample", type=click.Path(path_type=Path))
@click.option("--description", default=None, help="What the voice is (shown by list and show).")
@click.option("--text", "transcript", default=None, metavar="TRANSCRIPT", help="What the sample says.")
@one_line_errors
def add(name, sample, description, transcript) -> None:
    """Save SAMPLE (1-60 s of one person's clean speech; wav, flac, mp3, m4a) as voice NAME.

    Save only a voice you have the right to use: your own, or one whose speaker agreed."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        record = api.add(settings, conn.redis, name, sample, description, transcript)
    click.echo(f"voice {record.name} saved ({record.seconds:.1f} s, sample {record.sha256[:12]})")


@voice_group.command(name="list")
@click.option("--model", default=None, help="Also list this model's preset speakers (a CustomVoice model).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: one object per voice.")
@one_line_errors
def list_(model, as_json) -> None:
    """The saved voices (and, with --model, the model's preset speakers)."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        rows = api.list_voices(conn.redis, model)
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    if not rows:
        click.echo("no saved voices (add one: narrate voice add NAME SAMPLE; or list a model's presets: --model M)")
        return
    for row in rows:
        ident = row["speaker"] if row["kind"] == "preset" else (row["sha256"] or "")[:12]
        when = (row["created_at"] or "")[:10]
        click.echo(f"{row['name']:<20} {row['kind']:<8} {ident:<12} {when:<10} {row['description'][:60]}")


@voice_group.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@one_line_errors
def show(name, as_json) -> None:
    """A saved voice (or a design waiting to be kept): its record and the jobs that still name it."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        info = api.show(conn.redis, settings, name)
    if as_json:
        click.echo(json.dumps(info, indent=1))
        return
    for k, v in info.items():
        if k == "used_by":
            v = "; ".join(v) if v else "no queued, scheduled or recurring job"
        if v not in (None, ""):
            click.echo(f"{k}: {v}")


@voice_group.command()
@click.argument("old")
@click.argument("new")
@one_line_errors
def rename(old, new) -> None:
    """Rename a saved voice (jobs already queued keep the sample they were submitted with)."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        record = api.rename(conn.redis, old, new)
    click.echo(f"voice {old.lower()} is now {record.name}")


@voice_group.command()
@click.argument("name")
@click.option("--force", is_flag=True, help="Remove it even while queued, scheduled or recurring jobs name it.")
@one_line_errors
def remove(name, force) -> None:
    """Remove a saved voice (refused while a queued, scheduled or recurring job names it, unless --force:
    those jobs keep the sample they were submitted with)."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        record, users = api.remove(conn.redis, settings, name, force)
    kept = f"; {len(users)} job(s) and schedule(s) keep their copy of its sample" if users else ""
    click.echo(f"voice {record.name} removed{kept}")


def _wait(conn: Connection, job_id: str, no_wait: bool) -> bool:
    if no_wait:
        click.echo(job_id)
        return False
    st = wait_for(conn, job_id, quiet=False)
    if st["status"] != "finished":
        raise click.ClickException(f"job {job_id} {st['status']}: {st.get('error', '')}")
    for warning in (st.get("result") or {}).get("warnings", []):
        click.echo(f"warning: {warning}", err=True)
    return True


@voice_group.command()
@click.argument("voice")
@text_option
@click.option("--document", type=click.Path(path_type=Path), default=None, help="Speak its first sentence.")
@click.option("--instruct", default=None, metavar="TEXT", help="A preset speaker's style (1.7B CustomVoice).")
@model_option
@quant_option
@language_option
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the clip goes (default: VOICE-preview.wav here).",
)
@wait_option
@one_line_errors
def preview(voice, text, document, instruct, model, quant, language, output, no_wait) -> None:
    """Hear VOICE (a saved voice, a sample file or a preset speaker) speak one line: a short job ahead of
    the books in the queue."""
    settings = settings_from_env()
    options = Options.make(model=model, quant=quant)
    if document is not None and text is not None:
        raise click.UsageError("give --text or --document, not both")
    line = api.first_sentence(document) if document is not None else text
    with Connection(settings) as conn:
        chosen = choose_voice(settings, voice, options, instruct, conn)
        job = api.preview(settings, conn.redis, chosen, line, language, options.model, quant)
        if not _wait(conn, job.id, no_wait):
            return
        out = output or Path(f"{chosen.name or Path(voice).stem}-preview.wav")
        click.echo(api.write_clip(conn.redis, job.id, 1, out))


@voice_group.command()
@click.argument("name")
@click.argument("description")
@text_option
@click.option(
    "--candidates",
    type=click.IntRange(1, MAX_CANDIDATES),
    default=3,
    show_default=True,
    help="How many clips to make (each with its own seed).",
)
@click.option("--model", default=None, help="A VoiceDesign model (default: the 1.7B VoiceDesign).")
@quant_option
@language_option
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the candidates go (default: NAME-candidates/ under the output root, NARRATE_OUTPUT_DIR).",
)
@wait_option
@one_line_errors
def design(name, description, text, candidates, model, quant, language, output_dir, no_wait) -> None:
    """Design voice NAME from a DESCRIPTION ("Female, 60s, low raspy alto, unhurried"): one job makes
    candidate clips; hear them, then save one with `narrate voice keep NAME N`. Books are read from the
    kept clip by a Base model: one stable voice for a whole book."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        draft, job = api.design(settings, conn.redis, name, description, text, candidates, model, quant, language)
        click.echo(f"designing {draft.name}: {count(len(draft.seeds), 'candidate')} in job {job.id}", err=True)
        if not _wait(conn, job.id, no_wait):
            return
        folder = output_dir or settings.output_dir.expanduser() / f"{draft.name}-candidates"  # where outputs go
        for n in api.clip_numbers(conn.redis, job.id):
            click.echo(api.write_clip(conn.redis, job.id, n, folder / f"{draft.name}-{n}.wav"))
    click.echo(f"keep one: narrate voice keep {draft.name} N (N from 1 to {len(draft.seeds)})", err=True)


@voice_group.command()
@click.argument("name")
@click.argument("number", type=int)
@one_line_errors
def keep(name, number) -> None:
    """Save candidate NUMBER of design NAME as a voice of the library (with its description)."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        record = api.keep(settings, conn.redis, name, number)
    click.echo(f"voice {record.name} saved from candidate {number} ({record.seconds:.1f} s)")
