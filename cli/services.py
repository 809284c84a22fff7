"""Long-running services and tools: `narrate worker`, `narrate dashboard`, `narrate bench`."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from narrate.cli.common import fail, one_line_errors, settings_from_env
from narrate.jobs.errors import NarrateError
from narrate.jobs.server.connection import Connection


@click.command()
@click.option("--burst", is_flag=True, help="Exit when the queue is empty.")
@click.option("--queue", "queue_name", default=None, help="Queue to take jobs from (NARRATE_QUEUE).")
@click.option("--quiet", is_flag=True, help="Log warnings only.")
def worker(burst, queue_name, quiet) -> None:
    """Run a worker: takes jobs one at a time and keeps models loaded between them.

    A supervisor runs the worker process, restarts it if it crashes and kills it if it hangs."""
    from narrate.worker.process.supervisor import supervise

    settings = settings_from_env()
    sys.exit(supervise(settings, burst, queue_name, "WARNING" if quiet else "INFO"))


@click.command()
@click.option("--bind", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=9181, show_default=True, help="Port to listen on.")
@one_line_errors
def dashboard(bind, port) -> None:
    """Serve rq-dashboard for narrate's queues (JSON jobs, basic auth off loopback), with narrate's
    progress page at /narrate (progress, realtime factor, ETA, due times)."""
    import signal

    from narrate.jobs.dashboard.app import check_exposure, make_app, serve, served_hosts

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # leave cleanly: release the server
    settings = settings_from_env()
    user, password = settings.dashboard_username, settings.dashboard_password
    check_exposure(bind, user, password)
    hosts = served_hosts(bind, port, settings.dashboard_hosts)
    with Connection(settings) as conn:  # keeps the embedded server up while serving
        app = make_app(settings.redis_url or conn.url, user, password, hosts)
        click.echo(f"narrate dashboard on http://{bind}:{port} ({conn.url}); job progress: /narrate", err=True)
        if bind in ("0.0.0.0", "::") and not settings.dashboard_hosts:
            click.echo("Set NARRATE_DASHBOARD_HOSTS to the names you reach it by (others get 400).", err=True)
        serve(app, bind, port)


@click.command()
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
@click.option(
    "--workload",
    type=click.Choice(["book", "fixed"]),
    default="book",
    show_default=True,
    help="book: a real chapter's sentences with the budgets jobs give them; fixed: --frames each.",
)
@click.option("--sentences", default=16, show_default=True, help="Sentences per variant (book: 0 = the whole chapter).")
@click.option("--frames", default=24, show_default=True, help="fixed: codec frames per sentence (12.5 = 1 s).")
@click.option(
    "--budget-scale",
    default=1.0,
    show_default=True,
    help="book: scale the budgets down (e.g. 0.2 on a CPU), keeping their spread.",
)
@click.option("--batch-sizes", default="4,8,16", show_default=True, help="Rows per batch (static and continuous).")
@click.option("--warmup-frames", default=4, show_default=True, help="Frames per sentence in the warm-up.")
@click.option("--allow-eos", is_flag=True, help="Let sentences stop at EOS (default: exactly their budget).")
@click.option(
    "--json",
    "out_json",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Where to write the JSON (default: $NARRATE_HOME/bench/DATE-TIME.json).",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also draw x realtime and first audio per variant into this PNG (needs matplotlib).",
)
@click.option(
    "--variants",
    default="plain,mlx-batch,static,continuous",
    show_default=True,
    metavar="LIST",
    help="Which to run besides the plain loop: mlx-batch (mlx-audio's batch_generate: many minutes at 16 rows on "
    "a CPU), static, continuous, and the peers mlx-continuous (mlx-audio's continuous-batching session: a preset "
    "speaker, so it brings --voice-kind preset) and torch (the PyTorch qwen-tts package: needs --torch-python).",
)
@click.option(
    "--voice-kind",
    type=click.Choice(["clone", "preset"]),
    default="clone",
    show_default=True,
    help="preset: also run narrate's static and continuous variants with a preset speaker on a random-weight "
    "CustomVoice checkpoint of the same size (same sentences, seeds, budgets), to compare with the cloned rows.",
)
@click.option(
    "--voices",
    type=click.IntRange(1, 32),
    default=1,
    show_default=True,
    metavar="N",
    help="N > 1: also run narrate's static and continuous variants with the sentences' voices assigned round-robin "
    "from N cloned voices (rows of N voices share every batch), to compare with rows of one voice.",
)
@click.option(
    "--quant",
    type=click.Choice(["bf16", "float32"]),
    default=None,
    help="The dtype every MLX variant computes in (default: a job's on this host: float32 on a CPU with the system "
    "OpenBLAS, else bf16).",
)
@click.option(
    "--torch-python",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    metavar="PYTHON",
    help="torch variants: a Python with torch and qwen-tts (its own venv: torch is no dependency of narrate); "
    "without it, or if it cannot import them, they are skipped with the reason.",
)
@click.option(
    "--torch-dtype",
    type=click.Choice(["auto", "float32", "bfloat16"]),
    default="auto",
    show_default=True,
    help="torch variants' dtype; auto: bfloat16 on CUDA, float32 on a CPU (torch's fast CPU path).",
)
@click.option(
    "--torch-threads",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    metavar="N",
    help="torch variants' intra-op threads (0: torch's default, one per core).",
)
def bench(
    checkpoint,
    size,
    workload,
    sentences,
    frames,
    budget_scale,
    batch_sizes,
    warmup_frames,
    allow_eos,
    out_json,
    plot_path,
    variants,
    voice_kind,
    voices,
    quant,
    torch_python,
    torch_dtype,
    torch_threads,
) -> None:
    """Benchmark the plain mlx-audio loop against narrate's static and continuous batches (with
    --voice-kind preset, also preset-speaker rows against cloned ones; with --voices N, also rows of
    N cloned voices against rows of one; with --variants ...,mlx-continuous,torch, also mlx-audio's
    continuous batching and the PyTorch qwen-tts package)."""
    import signal

    from narrate.worker.bench.bench_report import format_table, plot, pyplot
    from narrate.worker.bench.checkpoints import preset_checkpoint, random_checkpoint
    from narrate.worker.bench.runner import default_json, parse_families, run_bench
    from narrate.worker.bench.workloads import workload as make_workload

    signal.signal(signal.SIGTERM, _interrupted)  # clean up (its temp folder) as on Ctrl-C
    home = settings_from_env().home
    out_json = out_json or default_json(home)
    try:
        try:
            sizes = tuple(int(x) for x in batch_sizes.split(",") if x.strip())
        except ValueError:
            sizes = ()
        if not sizes or min(sizes) < 1:
            raise click.BadParameter(f"{batch_sizes!r}: give positive sizes, e.g. 4,8,16", param_hint="--batch-sizes")
        families = parse_families(variants)
        items = make_workload(workload, sentences, frames, budget_scale)
        if plot_path is not None:
            pyplot()  # fails now, not after minutes of measuring
        if checkpoint is None:
            checkpoint = random_checkpoint(home, size, log=lambda m: click.echo(m, err=True))
        preset = None
        if voice_kind == "preset" or "mlx-continuous" in families:  # its session speaks presets only
            preset = preset_checkpoint(home, checkpoint, log=lambda m: click.echo(m, err=True))
        report = run_bench(
            checkpoint,
            items,
            workload,
            sizes,
            warmup_frames,
            allow_eos,
            out_json,
            log=lambda m: click.echo(m, err=True),
            families=families,
            preset=preset,
            voices=voices,
            torch_python=torch_python,
            torch_dtype=torch_dtype,
            torch_threads=torch_threads,
            quant=quant,
        )
        click.echo(format_table(report))
        if plot_path is not None:
            plot(report, plot_path)
            click.echo(f"plot: {plot_path}")
    except NarrateError as e:
        raise fail(e) from None
    click.echo(
        f"speaker-encoder runs: narrate {report['speaker_encoder_runs_narrate_total']} in all, "
        f"plain {report['variants']['plain']['speaker_encoder_runs']} (measured run)"
    )
    click.echo(f"JSON: {out_json}")


def _interrupted(_signum, _frame) -> None:
    raise KeyboardInterrupt
