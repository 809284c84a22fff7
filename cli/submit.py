"""`narrate submit` and `narrate run`: documents in, jobs out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import redis
from narrate.cli.common import (
    choose_voices,
    fail,
    finish,
    one_line_errors,
    options_from,
    request_options,
    settings_from_env,
    voice_option,
    wait_for,
)
from narrate.jobs.api import batch, when
from narrate.jobs.api import submit as api
from narrate.jobs.counts import count
from narrate.jobs.errors import NarrateError
from narrate.jobs.outputs import whereabouts
from narrate.jobs.outputs.outputs import OUTPUTS
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings


@click.command()
@click.argument("documents", nargs=-1, required=True, type=click.Path(path_type=Path))
@voice_option
@click.option(
    "-o",
    "--output",
    default=None,
    help="Output file (one document: its extension picks the format), or directory (several documents, "
    "or an existing directory): each output is named after its document. A relative path is taken from the "
    "output root (NARRATE_OUTPUT_DIR); default: ROOT/DOCUMENT-NAME.mp3.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(ext.lstrip(".") for ext in OUTPUTS), case_sensitive=False),
    default=None,
    help="Output format when -o is a directory or not given (default mp3); epub: the book as its read-along EPUB, "
    "its audio inside (docs/readalong.md).",
)
@click.option("--at", "at", default=None, metavar="TIME", help="Run at TIME: 2026-12-01T02:00 (local) or with +01:00.")
@click.option("--in", "delay", default=None, metavar="DELAY", help="Run after DELAY: 30s, 90m, 2h, 1h30m, 1d.")
@request_options()
@click.option("--wait", is_flag=True, help="Wait for the jobs to finish, showing progress.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per job (JSON lines).")
@one_line_errors
def submit(documents, output, fmt, at, delay, wait, as_json, **kw) -> None:
    """Validate the DOCUMENTS and the voice, enqueue one narration job each, print their ids.

    Every document, output and the voice are checked before anything is enqueued: one bad file
    and nothing is."""
    options = options_from(kw)
    settings = settings_from_env()
    due = when.due(at, delay)
    with Connection(settings) as conn:
        narrator, cast = choose_voices(settings, kw, options, conn)
        reqs = batch.prepare_batch(settings, list(documents), narrator, output, fmt, options, cast)
        for req in reqs:
            if req.cast_line and not as_json:
                click.echo(f"{req.source}: {req.cast_line}", err=True)
            for warning in req.warnings:  # stderr: --json's stdout stays JSON
                click.echo(f"warning: {warning}", err=True)
        subs = api.submit_many(settings, conn.redis, reqs, at=due)
        for sub, req in zip(subs, reqs, strict=True):
            _report(sub, req, settings, as_json)
        if not wait:
            _unattended(conn, subs)
            return
        finals = [wait_for(conn, sub.job.id, quiet=as_json) for sub in subs]
    if len(finals) == 1:
        finish(finals[0], as_json)
        return
    for st in finals:
        if as_json:
            click.echo(json.dumps(st))
        elif st["status"] == "finished":
            click.echo(st["output"])
        else:
            click.echo(f"job {st['id']} {st['status']}: {st.get('error', '')}", err=True)
    bad = [st for st in finals if st["status"] != "finished"]
    if bad:
        raise click.ClickException(f"{len(bad)} of {count(len(finals), 'job')} did not finish")


def _unattended(conn: Connection, subs: list[api.Submitted]) -> None:
    """Said once, on stderr: a queued job waits on a queue no worker takes jobs from."""
    for sub in subs:
        name = api.unattended_queue(conn.redis, sub.job.id) if not sub.due else None
        if name is not None:
            click.echo(
                f"note: no worker is taking jobs from queue {name!r} now: the job waits there until one starts "
                "(`narrate worker`, in another terminal or as a service)",
                err=True,
            )
            return


def _report(sub: api.Submitted, req: api.Request, settings: Settings, as_json: bool) -> None:
    job_id = sub.job.id
    if sub.note:
        click.echo(f"note: {sub.note}", err=True)
    if sub.duplicate and not as_json:
        note = {
            "queued": "already queued or running",
            "done": "already done",
            "resumed": "resumed",
            "scheduled": "already scheduled",
            "rescheduled": "scheduled again",
        }
        due = f" for {when.describe(sub.due)}" if sub.due else ""
        click.echo(f"identical job {job_id} {note[sub.duplicate]}{due}", err=True)
    if not as_json:
        click.echo(job_id)
        click.echo(f"output: {settings.output_dir.expanduser().resolve() / req.output}", err=True)
        return
    status = "finished" if sub.duplicate == "done" else "scheduled" if sub.due else "queued"
    info = {
        "id": job_id,
        "status": status,
        "duplicate": sub.duplicate,
        "document": req.source,
        "sentences": len(req.document.sentences),
        "output": str(settings.output_dir.expanduser().resolve() / req.output),
        "priority": req.priority,
        "scheduled_for": sub.due.isoformat() if sub.due else None,
    }
    click.echo(json.dumps(info))


@click.command()
@click.argument("document", type=click.Path(path_type=Path))
@voice_option
@click.option(
    "-o",
    "--output",
    default=None,
    help="Output file, written where it points (relative: from the current directory; default: "
    "DOCUMENT-NAME.mp3 here). Under the output root (NARRATE_OUTPUT_DIR) it is recorded relative to it, "
    "as a worker's is; elsewhere its directory is run's output root.",
)
@request_options(queued=False)
@click.option(
    "--here",
    is_flag=True,
    help="Synthesize in this process even beside a running `narrate worker` of this server (it then waits "
    "for the host lock that worker holds); by default the job is handed to that worker.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the final status as JSON.")
def run(document, output, as_json, here, **kw) -> None:
    """Narrate one document here and now: server, queue and worker in this one command, or the
    running `narrate worker` of this host and server, which the job is then handed to."""
    import atexit
    import gc
    import signal

    from narrate.worker.process.inprocess import run_in_process  # loads the worker side: only here

    signal.signal(signal.SIGTERM, _interrupted)  # clean up (private queue, unfinished job) like Ctrl-C
    # At exit, the interpreter's last garbage collection would walk every object the worker side
    # loaded (mlx-audio, transformers, the model): about a second on a small CPU, after the output
    # is already in place. Frozen objects are skipped; modules are still torn down.
    atexit.register(gc.freeze)
    out = Path(output) if output else Path(Path(document).with_suffix(".mp3").name)
    out = out.expanduser().absolute()
    try:
        options = options_from(kw)
        root = whereabouts.run_root(out, settings_from_env().output_dir)  # docs/usage.md#where-outputs-go
        settings = settings_from_env(output_dir=root)
        narrator, cast = choose_voices(settings, kw, options)
        [req] = api.prepare_many(settings, [document], narrator, [out], options, cast)
        if req.cast_line:
            click.echo(req.cast_line, err=True)
        for warning in req.warnings:
            click.echo(f"warning: {warning}", err=True)
        total = len(req.document.sentences)
        with click.progressbar(length=total, label="narrating", file=sys.stderr, show_pos=True) as bar:
            st = run_in_process(
                settings,
                req,
                on_progress=lambda done, _total, _audio: bar.update(done - bar.pos),
                waiting=lambda msg: click.echo(f"\n{msg}", err=True),
                say=lambda msg: click.echo(f"\n{msg}", err=True),
                here=here,
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
