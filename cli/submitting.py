"""`narrate submit` and `narrate run`: documents in, jobs out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import redis
from narrate.jobs import api
from narrate.jobs.connection import Connection
from narrate.jobs.errors import NarrateError
from narrate.jobs.settings import Settings

from .common import (
    fail,
    finish,
    max_frames_option,
    model_option,
    overwrite_option,
    quant_option,
    seed_option,
    settings_from_env,
    voice_option,
    wait_for,
)


@click.command()
@click.argument("document", type=click.Path(path_type=Path))
@voice_option
@model_option
@quant_option
@seed_option
@max_frames_option
@click.option(
    "-o",
    "--output",
    default=None,
    help="Output file under the output root (NARRATE_OUTPUT_DIR); a relative path is taken from the root "
    "(default: ROOT/DOCUMENT-NAME.mp3). Its extension picks the format.",
)
@overwrite_option
@click.option("--wait", is_flag=True, help="Wait for the job to finish, showing progress.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def submit(document, voice, model, quant, seed, max_frames, output, overwrite, wait, as_json) -> None:
    """Validate DOCUMENT and the voice, enqueue one narration job, print its id."""
    settings = settings_from_env(seed=seed, max_frames=max_frames)
    try:
        req = api.prepare(settings, document, voice, output=output, model=model, quant=quant, overwrite=overwrite)
        with Connection(settings) as conn:
            sub = api.submit(settings, conn.redis, req)
            if sub.note:
                click.echo(f"note: {sub.note}", err=True)
            if sub.duplicate and not as_json:
                note = {"queued": "already queued or running", "done": "already done", "resumed": "resumed"}
                click.echo(f"identical job {sub.job.id} {note[sub.duplicate]}", err=True)
            if not wait:
                _print_submitted(sub, req, settings, as_json)
                return
            if not as_json:
                click.echo(sub.job.id)
            final = wait_for(conn, sub.job.id, quiet=as_json)
    except (NarrateError, redis.RedisError) as e:
        raise fail(e) from None
    finish(final, as_json)


def _print_submitted(sub: api.Submitted, req: api.Request, settings: Settings, as_json: bool) -> None:
    job_id = sub.job.id
    if as_json:
        info = {
            "id": job_id,
            "status": "finished" if sub.duplicate == "done" else "queued",
            "duplicate": sub.duplicate,
            "sentences": len(req.document.sentences),
            "output": str(settings.output_dir.expanduser().resolve() / req.output),
        }
        click.echo(json.dumps(info))
    else:
        click.echo(job_id)
        click.echo(f"output: {settings.output_dir.expanduser().resolve() / req.output}", err=True)


@click.command()
@click.argument("document", type=click.Path(path_type=Path))
@voice_option
@model_option
@quant_option
@seed_option
@max_frames_option
@click.option(
    "-o",
    "--output",
    default=None,
    help="Output file, written where it points (relative: from the current directory; default: "
    "DOCUMENT-NAME.mp3 here). Its directory is run's output root; NARRATE_OUTPUT_DIR does not apply.",
)
@overwrite_option
@click.option("--json", "as_json", is_flag=True, help="Print the final status as JSON.")
def run(document, voice, model, quant, seed, max_frames, output, overwrite, as_json) -> None:
    """Narrate one document here and now: server, queue and worker in this one command."""
    import signal

    from narrate.worker.inprocess import run_in_process  # loads the worker side: only here

    signal.signal(signal.SIGTERM, _interrupted)  # clean up (private queue, unfinished job) like Ctrl-C
    out = Path(output) if output else Path(Path(document).with_suffix(".mp3").name)
    out = out.expanduser().absolute()
    settings = settings_from_env(output_dir=out.parent, seed=seed, max_frames=max_frames)
    try:
        req = api.prepare(settings, document, voice, output=out, model=model, quant=quant, overwrite=overwrite)
        total = len(req.document.sentences)
        with click.progressbar(length=total, label="narrating", file=sys.stderr, show_pos=True) as bar:
            st = run_in_process(
                settings,
                req,
                on_progress=lambda done, _total, _audio: bar.update(done - bar.pos),
                waiting=lambda msg: click.echo(f"\n{msg}", err=True),
            )
    except (NarrateError, redis.RedisError) as e:
        raise fail(e) from None
    except KeyboardInterrupt:
        raise click.ClickException("interrupted; run the same command again to continue from its checkpoints") from None
    if st["status"] == "queued":  # a warm stop inside the worker
        p = st["progress"]
        raise click.ClickException(
            f"stopped after {p.get('done', 0)} of {p.get('total', 0)} sentences; "
            "run the same command again to continue from its checkpoints"
        )
    finish(st, as_json)


def _interrupted(_signum, _frame) -> None:
    raise KeyboardInterrupt
