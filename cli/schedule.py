"""`narrate schedule add|list|remove|run` (recurring batches of a watched folder) and `narrate scheduler`."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from pathlib import Path

import click
from narrate.cli.common import (
    choose_voices,
    one_line_errors,
    options_from,
    request_options,
    settings_from_env,
    voice_option,
)
from narrate.jobs.counts import count
from narrate.jobs.schedules import cron, tick
from narrate.jobs.schedules import definitions as schedules
from narrate.jobs.schedules import loop as scheduler_loop
from narrate.jobs.server.connection import Connection

SHOWN_DOCUMENTS = 20  # per list in the text output (--json has them all)


@click.group()
def schedule() -> None:
    """Recurring batches: narrate what is new or changed in a folder at the times a cron expression names.

    A running `narrate worker` or `narrate scheduler` (on any host sharing the server) runs the ticks."""


@schedule.command()
@click.argument("name")
@click.option("--cron", "cron_expr", required=True, help='When, as a cron expression: "0 2 * * *" is 2 am daily.')
@click.option(
    "--watch",
    required=True,
    type=click.Path(path_type=Path, readable=False),
    help="Folder whose documents are narrated.",
)
@voice_option
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Folder for the outputs, named after each document (default: the output root).",
)
@click.option(
    "--format",
    "fmt",
    default="mp3",
    show_default=True,
    help="Output format (extension): mp3, m4b, ...; epub: each book as its read-along EPUB.",
)
@click.option("--tz", default=None, help="IANA time zone of the cron expression (default: this host's).")
@request_options(without=("chapters",))  # chapters are picked in one document; a schedule reads a folder of them
@one_line_errors
def add(name, cron_expr, watch, output_dir, fmt, tz, **kw) -> None:
    """Add schedule NAME: at each tick, submit every document of the folder not narrated yet or changed,
    with the options `narrate submit` takes.

    The voice (a saved voice's sample too), the lexicon and the cover are read now and kept with the
    schedule (add it again to change them)."""
    options = options_from(kw)
    settings = settings_from_env()
    with Connection(settings) as conn:
        chosen, cast = choose_voices(settings, kw, options, conn)
        sched = schedules.make(settings, name, cron_expr, watch, chosen, output_dir, fmt, tz, options, cast)
        schedules.add(conn.redis, sched, chosen, cast)
    nxt = cron.next_tick(sched.cron, sched.tz, time.time())
    click.echo(f"schedule {name} added: next run {cron.show(nxt, sched.tz)}")


@schedule.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per schedule, all documents).")
@one_line_errors
def list_(as_json) -> None:
    """Show each schedule: cron, next and last run, what it submitted, documents skipped and why."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        r = conn.redis
        views = [schedules.describe(r, s, settings.output_dir) for s in schedules.all_schedules(r)]
        live = scheduler_loop.running(r)
    if as_json:
        click.echo(json.dumps({"schedules": views, "schedulers": [list(x) for x in live]}))
        return
    if not views:
        click.echo("no schedules (add one with: narrate schedule add NAME --cron ... --watch DIR --voice ...)")
        return
    for view in views:
        _print_view(view)
    if not live:
        click.echo("note: no scheduler is running: start `narrate worker` or `narrate scheduler`", err=True)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def _print_view(v: dict) -> None:
    click.echo(f"{v['name']}: {v['cron']} ({v['tz']}), {v['watch']} -> {v['output_dir']}/*{v['format']}")
    if v["language"] != "auto" or v["lexicon_entries"]:
        click.echo(f"  language: {v['language']}, lexicon: {count(v['lexicon_entries'], 'entry', 'entries')}")
    shown = _options_line(v)
    if shown:
        click.echo(f"  options: {shown}")
    nxt = cron.show(v["next_run"], v["tz"]) + (" (due now)" if v["due_now"] else "")
    click.echo(f"  next run: {nxt}")
    last = v["last_run"]
    if last:
        kind = "manual" if last["manual"] else f"tick of {cron.show(last['tick'], v['tz'])}"
        click.echo(
            f"  last run: {_when(last['started'])} ({kind}, host {last['host']}): {len(last['submitted'])} "
            f"submitted, {len(last['waiting'])} waiting, {last['unchanged']} unchanged"
        )
        _print_docs("submitted", [f"{d['document']} -> {d['job']}" for d in last["submitted"]])
        _print_docs("waiting", [f"{d['document']}: {d['reason']}" for d in last["waiting"]])
    else:
        click.echo("  last run: never")
    _print_docs("skipped", [f"{d['document']}: {d['reason']}" for d in v["skipped"]])
    if v["running"]:
        h = v["running"]
        click.echo(f"  running now: host {h.get('host')}, pid {h.get('pid')}, since {_when(h.get('started'))}")
    if v["problem"]:
        p = v["problem"]
        click.echo(f"  problem: {p['reason']} (host {p['host']}, since {_when(p['since'])})")


def _options_line(v: dict) -> str:
    """The options that differ from submit's defaults: "priority high, subtitles srt, split chapters"."""
    opts = dict(v.get("options") or {})
    items = {**({"priority": v["priority"]} if v.get("priority", "normal") != "normal" else {}), **opts.pop("book", {})}
    items |= {k: x for k, x in opts.items() if k != "reading"}
    items |= {k: x for k, x in (opts.get("reading") or {}).items() if k != "language"}
    return ", ".join(f"{k.replace('_', ' ')} {x}" for k, x in items.items() if x not in (None, "", False))


def _print_docs(label: str, lines: list[str]) -> None:
    for line in lines[:SHOWN_DOCUMENTS]:
        click.echo(f"    {label}: {line}")
    if len(lines) > SHOWN_DOCUMENTS:
        click.echo(f"    ... and {len(lines) - SHOWN_DOCUMENTS} more {label} (--json lists them all)")


@schedule.command()
@click.argument("name")
@one_line_errors
def remove(name) -> None:
    """Remove schedule NAME (the jobs it submitted stay)."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        schedules.remove(conn.redis, name)
    click.echo(f"schedule {name} removed")


@schedule.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the tick's report as JSON.")
@one_line_errors
def run(name, as_json) -> None:
    """Run a tick of schedule NAME now (the cron ticks stay as they are)."""
    logging.getLogger("narrate.scheduler").addHandler(logging.NullHandler())  # printed below instead
    settings = settings_from_env()
    with Connection(settings) as conn:
        report = tick.run_now(settings, conn.redis, name)
    if as_json:
        click.echo(json.dumps(report))
        return
    for d in report["submitted"]:
        click.echo(f"submitted {d['document']} -> {d['job']} ({d['output']})")
    for d in report["waiting"]:
        click.echo(f"waiting {d['document']}: {d['reason']}")
    for d in report["skipped_new"]:
        click.echo(f"skipped {d['document']}: {d['reason']}")
    click.echo(f"{len(report['submitted'])} submitted, {report['unchanged']} unchanged", err=True)


@click.command()
@click.option("--queue", "queue_name", default=None, help="Queue whose --at/--in jobs it moves (NARRATE_QUEUE).")
@click.option("--quiet", is_flag=True, help="Log warnings only.")
@one_line_errors
def scheduler(queue_name, quiet) -> None:
    """Run the scheduler alone (`narrate worker` runs one too): due --at/--in jobs and schedule ticks."""
    logging.basicConfig(level="WARNING" if quiet else "INFO", format="%(asctime)s %(name)s %(levelname)s %(message)s")
    settings = settings_from_env()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    scheduler_loop.serve(settings, stop, queue_name)
