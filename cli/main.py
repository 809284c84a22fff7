"""The `narrate` command line."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
import redis
from narrate.jobs import api
from narrate.jobs.connection import Connection
from narrate.jobs.durability import durable_writes
from narrate.jobs.errors import NarrateError
from narrate.jobs.settings import QUANTS, Settings

quant_option = click.option(
    "--quant",
    default=None,
    metavar="|".join(QUANTS),
    help="Quantization (default: NARRATE_QUANT, else by model).",
)
model_option = click.option("--model", default=None, help="Hugging Face id or local checkpoint dir (NARRATE_MODEL).")
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
voice_option = click.option(
    "--voice", required=True, type=click.Path(path_type=Path), help="Voice sample (1-60 s of speech)."
)


def _settings(**overrides: object) -> Settings:
    try:
        return Settings.from_env(**overrides)
    except (NarrateError, redis.RedisError) as e:
        raise click.ClickException(str(e)) from None


def _fail(e: Exception) -> click.ClickException:
    if isinstance(e, redis.RedisError):  # e.g. OOM (maxmemory) or MISCONF (its disk is full)
        return click.ClickException(f"the Redis server refused: {str(e).splitlines()[0]}")
    return click.ClickException(str(e))


@click.group()
@click.version_option(package_name="narrate")
def main() -> None:
    """Queue-native batch narration: documents and a voice sample in, audiobook files out."""


@main.command()
@click.argument("document", type=click.Path(path_type=Path))
@voice_option
@model_option
@quant_option
@seed_option
@max_frames_option
@click.option("-o", "--output", default=None, help="Output file; its extension picks the format (mp3 default).")
@overwrite_option
@click.option("--wait", is_flag=True, help="Wait for the job to finish, showing progress.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def submit(document, voice, model, quant, seed, max_frames, output, overwrite, wait, as_json) -> None:
    """Validate DOCUMENT and the voice, enqueue one narration job, print its id."""
    settings = _settings(seed=seed, max_frames=max_frames)
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
            final = _wait(conn, sub.job.id, quiet=as_json)
    except (NarrateError, redis.RedisError) as e:
        raise _fail(e) from None
    _finish(final, as_json)


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


def _wait(conn: Connection, job_id: str, quiet: bool, poll_s: float = 0.5) -> dict:
    last = None
    while True:
        st = api.status(conn.redis, job_id)
        p = st["progress"]
        line = f"{st['status']}: {p.get('done', 0)}/{p.get('total', 0)} sentences"
        if not quiet and line != last:
            click.echo(line, err=True)
            last = line
        if st["status"] in ("finished", "failed", "canceled", "stopped"):
            return st
        time.sleep(poll_s)


def _finish(st: dict, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(st))
    elif st["status"] == "finished":
        click.echo(st["output"])
    if st["status"] != "finished":
        raise click.ClickException(f"job {st['id']} {st['status']}: {st.get('error', '')}")


@main.command()
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(job_id, as_json) -> None:
    """Show a job's status, progress, output path or error."""
    settings = _settings()
    try:
        with Connection(settings) as conn:
            st = api.status(conn.redis, job_id)
    except (NarrateError, redis.RedisError) as e:
        raise _fail(e) from None
    if as_json:
        click.echo(json.dumps(st))
        return
    p = st["progress"]
    click.echo(f"{st['id']}: {st['status']} ({p.get('done', 0)}/{p.get('total', 0)} sentences)")
    if st.get("output"):
        click.echo(f"output: {st['output']} ({st.get('duration_seconds', 0):.1f} s)")
    if st.get("output_replaced_by"):
        click.echo(f"note: its output was replaced since by job {st['output_replaced_by']}")
    if st.get("error"):
        click.echo(f"error: {st['error']}")


@main.command()
@click.argument("job_ids", nargs=-1)
@click.option("--queue", "queue_name", default=None, help="Queue to look in (NARRATE_QUEUE).")
def resume(job_ids, queue_name) -> None:
    """Requeue failed or abandoned jobs (all of the queue's, or JOB_IDS); they resume from their
    checkpoints."""
    settings = _settings()
    try:
        with Connection(settings) as conn, durable_writes(conn.redis):
            done = api.resume(conn.redis, list(job_ids), queue_name or settings.queue)
    except (NarrateError, redis.RedisError) as e:
        raise _fail(e) from None
    for job_id, what in done:
        click.echo(f"{job_id}: {what}")
    if not done:
        click.echo("nothing to resume")


@main.command()
@click.option("--burst", is_flag=True, help="Exit when the queue is empty.")
@click.option("--queue", "queue_name", default=None, help="Queue to take jobs from (NARRATE_QUEUE).")
@click.option("--quiet", is_flag=True, help="Log warnings only.")
def worker(burst, queue_name, quiet) -> None:
    """Run a worker: takes jobs one at a time and keeps models loaded between them.

    A supervisor runs the worker process, restarts it if it crashes and kills it if it hangs."""
    from narrate.worker.supervisor import supervise

    settings = _settings()
    sys.exit(supervise(settings, burst, queue_name, "WARNING" if quiet else "INFO"))


@main.command()
@click.argument("document", type=click.Path(path_type=Path))
@voice_option
@model_option
@quant_option
@seed_option
@max_frames_option
@click.option("-o", "--output", default=None, help="Output file (default: DOCUMENT name with .mp3).")
@overwrite_option
@click.option("--json", "as_json", is_flag=True, help="Print the final status as JSON.")
def run(document, voice, model, quant, seed, max_frames, output, overwrite, as_json) -> None:
    """Narrate one document here and now: server, queue and worker in this one command."""
    import signal

    from narrate.worker.inprocess import run_in_process  # loads the worker side: only here

    signal.signal(signal.SIGTERM, _interrupted)  # clean up (private queue, unfinished job) like Ctrl-C
    out = Path(output) if output else Path(Path(document).with_suffix(".mp3").name)
    out = out.expanduser().absolute()
    settings = _settings(output_dir=out.parent, seed=seed, max_frames=max_frames)
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
        raise _fail(e) from None
    except KeyboardInterrupt:
        raise click.ClickException("interrupted; run the same command again to continue from its checkpoints") from None
    if st["status"] == "queued":  # a warm stop inside the worker
        p = st["progress"]
        raise click.ClickException(
            f"stopped after {p.get('done', 0)} of {p.get('total', 0)} sentences; "
            "run the same command again to continue from its checkpoints"
        )
    _finish(st, as_json)


def _interrupted(_signum, _frame) -> None:
    raise KeyboardInterrupt


@main.command()
@click.option("--bind", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=9181, show_default=True, help="Port to listen on.")
def dashboard(bind, port) -> None:
    """Serve rq-dashboard for narrate's queues (JSON jobs, basic auth off loopback)."""
    import signal

    from narrate.jobs.dashboard import check_exposure, make_app, served_hosts

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # leave cleanly: release the server
    settings = _settings()
    user, password = settings.dashboard_username, settings.dashboard_password
    try:
        check_exposure(bind, user, password)
        hosts = served_hosts(bind, port, settings.dashboard_hosts)
        with Connection(settings) as conn:  # keeps the embedded server up while serving
            app = make_app(settings.redis_url or conn.url, user, password, hosts)
            click.echo(f"narrate dashboard on http://{bind}:{port} ({conn.url})", err=True)
            if bind in ("0.0.0.0", "::") and not settings.dashboard_hosts:
                click.echo("Set NARRATE_DASHBOARD_HOSTS to the names you reach it by (others get 400).", err=True)
            app.run(host=bind, port=port)
    except (NarrateError, redis.RedisError) as e:
        raise _fail(e) from None


@main.command()
@click.option(
    "--model",
    "checkpoint",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Local Qwen3-TTS Base checkpoint dir (default: a random-weight one, see --random).",
)
@click.option(
    "--random",
    "size",
    type=click.Choice(["tiny", "0.6b", "1.7b"]),
    default="tiny",
    help="Shape of the random-weight checkpoint built when --model is not given.",
)
@click.option("--sentences", default=16, show_default=True, help="Sentences per variant.")
@click.option("--frames", default=24, show_default=True, help="Codec frames per sentence (12.5 = 1 s).")
@click.option("--batch-sizes", default="1,2,4,8,16", show_default=True, help="Batch sizes to run.")
@click.option("--warmup-frames", default=4, show_default=True, help="Frames per sentence in the warm-up.")
@click.option("--allow-eos", is_flag=True, help="Let sentences stop at EOS (default: exactly --frames).")
@click.option(
    "--json",
    "out_json",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("bench-results.json"),
    show_default=True,
    help="Where to write the JSON.",
)
def bench(checkpoint, size, sentences, frames, batch_sizes, warmup_frames, allow_eos, out_json) -> None:
    """Benchmark plain mlx-audio against narrate's sequential and batched engine."""
    from narrate.worker.bench import format_table, random_checkpoint, run_bench

    if checkpoint is None:
        checkpoint = random_checkpoint(_settings().home, size, log=lambda m: click.echo(m, err=True))
    sizes = tuple(int(x) for x in batch_sizes.split(",") if x.strip())
    report = run_bench(
        checkpoint,
        sentences,
        frames,
        sizes,
        warmup_frames,
        allow_eos,
        out_json,
        log=lambda m: click.echo(m, err=True),
    )
    click.echo(format_table(report))
    click.echo(
        f"speaker-encoder runs: narrate {report['speaker_encoder_runs_narrate_total']} in all, "
        f"plain {report['variants']['plain']['speaker_encoder_runs']} (measured run)"
    )
    click.echo(f"JSON: {out_json}")


if __name__ == "__main__":
    main()
