"""Looking after jobs: `narrate status`, `narrate fetch`, `narrate resume`, `narrate list`, `narrate cancel`,
`narrate watch` (and `narrate status --follow`), `narrate info`."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime

import click
import redis
from narrate.cli.common import fail, one_line_errors, settings_from_env
from narrate.jobs.api import info as about
from narrate.jobs.api import listing
from narrate.jobs.api import submit as api
from narrate.jobs.errors import JobNotFound, NarrateError
from narrate.jobs.humanize import duration
from narrate.jobs.queue import cancel as canceling
from narrate.jobs.schedules.definitions import summary as schedule_rows
from narrate.jobs.server.connection import Connection
from narrate.jobs.server.durability import memory_full

ENDED = ("finished", "failed", "canceled", "stopped")


def local_time(iso: str | None) -> str:
    return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M") if iso else "-"


def progress_line(st: dict) -> str:
    """One line: status, sentences, audio seconds, realtime factor, ETA (what is known)."""
    p = st.get("progress") or {}
    done, total = p.get("done", 0), p.get("total", 0)
    parts = [st["status"], f"{done}/{total} sentences ({100 * done / total if total else 0:.0f}%)"]
    if st["status"] == "scheduled":
        parts.append(f"due {local_time(st.get('scheduled_for'))}")
    if p.get("audio_seconds"):
        parts.append(f"{p['audio_seconds']:.1f} s audio")
    if st["status"] == "started":
        if p.get("realtime_factor"):
            parts.append(f"{p['realtime_factor']:.2f}x realtime")
        parts.append(f"ETA {duration(p.get('eta_seconds'))}")
        if st.get("cancel_requested"):
            parts.append("stopping: canceled")
    return " · ".join(parts)


@click.command("list")
@click.option("--status", "state", type=click.Choice(listing.STATES), default=None, help="Only jobs in this state.")
@click.option("--queue", "queue_name", default=None, help="Queue to list (NARRATE_QUEUE), all three priorities.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per job (JSON lines).")
@one_line_errors
def list_jobs(state, queue_name, as_json) -> None:
    """List jobs, newest first: id, document, status, progress, ETA, output."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        rows = listing.list_jobs(conn.redis, queue_name or settings.queue, settings.output_dir, state)
        full = memory_full(conn.redis)
    if full:
        click.echo(f"warning: {full}", err=True)
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    if not rows:
        click.echo(f"no {state} jobs" if state else "no jobs", err=True)
        return
    table = [("ID", "DOCUMENT", "STATUS", "PROGRESS", "ETA", "OUTPUT")]
    for row in rows:
        status = "stopping" if row.get("stopping") else row["status"]
        status = status if row["priority"] == "normal" else f"{status} ({row['priority']})"
        if row["scheduled_for"]:
            status += f" {local_time(row['scheduled_for'])}"
        table.append(
            (
                row["id"],
                row["document"],
                status,
                f"{row['done']}/{row['total']} {row['percent']:.0f}%",
                duration(row["eta_seconds"]),
                row["output"] or "-",
            )
        )
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    click.echo("\n".join("  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[5]]) for r in table))


@click.command()
@click.argument("job_ids", nargs=-1, required=True)
@one_line_errors
def cancel(job_ids) -> None:
    """Cancel jobs: a queued or scheduled one is removed; a running one stops within a second and
    keeps its checkpoints (`narrate resume JOB` continues it); `narrate list` shows it as stopping."""
    settings = settings_from_env()
    errors = []
    with Connection(settings) as conn:
        for job_id in job_ids:
            try:
                click.echo(f"{job_id}: {canceling.cancel(conn.redis, job_id)}")
            except NarrateError as e:
                errors.append(str(e))
    for message in errors[:-1]:
        click.echo(f"Error: {message}", err=True)
    if errors:
        raise click.ClickException(errors[-1])


def follow_job(job_id: str, poll_s: float = 0.5) -> None:
    """Redraw the job's progress line until it ends; exit 0 only when it finished."""
    settings = settings_from_env()
    live = sys.stdout.isatty()
    last, st = None, None
    try:
        with Connection(settings) as conn:
            while True:
                try:
                    st = api.status(conn.redis, job_id)
                except JobNotFound:
                    if st is None:
                        raise
                    raise click.ClickException(f"job {job_id} was deleted while it was watched") from None
                line = progress_line(st)
                if live:
                    click.echo(f"\r{line}\x1b[K", nl=False)
                elif line != last:
                    click.echo(line)
                last = line
                if st["status"] in ENDED:
                    break
                time.sleep(poll_s)
    except (NarrateError, redis.RedisError) as e:
        raise fail(e) from None
    except KeyboardInterrupt:
        click.echo("", err=True)
        sys.exit(130)
    if live:
        click.echo()
    if st["status"] == "finished":
        click.echo(f"output: {st.get('output')} ({st.get('duration_seconds') or 0:.1f} s)")
        return
    why = st.get("error") or (f"narrate resume {job_id} continues it" if st["status"] == "canceled" else "")
    raise click.ClickException(f"job {job_id} {st['status']}" + (f": {why}" if why else ""))


@click.command()
@click.argument("job_id")
def watch(job_id) -> None:
    """Follow a job's progress (sentences, audio, realtime factor, ETA) until it ends; exit 0 only
    when it finished. The same as `narrate status JOB --follow`."""
    follow_job(job_id)


@click.command()
@click.option("--queue", "queue_name", default=None, help="Queue to describe (NARRATE_QUEUE).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@one_line_errors
def info(queue_name, as_json) -> None:
    """Show the server, the queues with their jobs per state, the workers and the schedules."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        facts = about.info(conn, queue_name or settings.queue)
        facts["schedules"] = schedule_rows(conn.redis)
    from narrate.worker.blas import in_use  # the worker side's rule, read lazily (as `narrate bench` does)

    facts["blas"] = in_use()  # what a worker started here would use for MLX's float32 products
    if as_json:
        click.echo(json.dumps(facts))
        return
    srv = facts["server"]
    kind = "embedded Valkey" if srv["kind"] == "embedded" else "NARRATE_REDIS_URL"
    click.echo(f"server: {srv['url']} ({kind}, version {srv['version'] or 'unknown'})")
    click.echo(f"blas: MLX's float32 products on this host use {facts['blas']}")
    click.echo("queues:")
    for q in facts["queues"]:
        counts = ", ".join(f"{q[s]} {s}" for s in listing.STATES)
        click.echo(f"  {q['name']} ({q['priority']}): {counts}")
    click.echo("workers:" if facts["workers"] else "workers: none")
    for w in facts["workers"]:
        job = f"job {w['current_job']} ({w['current_document']})" if w["current_job"] else "idle"
        blas = f"; blas {w['blas']}" if w.get("blas") else ""
        click.echo(f"  {w['name']} on {w['host']} (pid {w['pid']}): {job}; model {w['model'] or '-'}{blas}")
    schedules = facts["schedules"]
    click.echo("schedules:" if schedules else "schedules: none")
    for sched in schedules:
        click.echo("  " + ", ".join(f"{k} {v}" for k, v in sched.items()))


@click.command()
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--follow", is_flag=True, help="Redraw its progress until it ends (as `narrate watch`).")
@one_line_errors
def status(job_id, as_json, follow) -> None:
    """Show a job's status, progress, output path or error."""
    if follow:
        follow_job(job_id)
        return
    settings = settings_from_env()
    with Connection(settings) as conn:
        st = api.status(conn.redis, job_id)
        full = memory_full(conn.redis) if st["status"] not in ENDED else None
    if full:
        st["server_full"] = full
        click.echo(f"warning: {full}", err=True)
    if as_json:
        click.echo(json.dumps(st))
        return
    p = st["progress"]
    click.echo(f"{st['id']}: {st['status']} ({p.get('done', 0)}/{p.get('total', 0)} sentences)")
    if st["status"] in ("started", "scheduled"):
        click.echo(f"progress: {progress_line(st)}")
    if st.get("output"):
        click.echo(f"output: {st['output']} ({st.get('duration_seconds', 0):.1f} s)")
    result = st.get("result") or {}
    if "reused" in result:
        # First takes: what this job synthesized and what it found made already; the proof pass's retakes
        # are counted on its own line (a job whose takes all came from the cache says 0 here, N retakes there).
        click.echo(f"first takes: {result['synthesized']} synthesized, {result['reused']} reused from the cache")
    proof = result.get("proof") or st.get("proof")
    if proof:  # --proof: its counts (the result's once finished, else so far)
        click.echo(f"proof: {proof_line(st['id'], proof, 'proof' in result)}")
    if st.get("redo_of"):
        click.echo(f"redo of: {st['redo_of']}")
    if st.get("superseded_by"):
        click.echo(f"superseded by: {st['superseded_by']} (narrate redo)")
    elif st.get("output_replaced_by"):
        click.echo(f"note: its output was replaced since by job {st['output_replaced_by']}")
    if st.get("parts"):
        done = sum(p["status"] == "finished" for p in st["parts"])
        hosts = f"; hosts at work: {len(st['hosts'])}" if st.get("hosts") else ""
        click.echo(f"parts: {done}/{len(st['parts'])} finished{hosts}")
    if st.get("error"):
        click.echo(f"error: {st['error']}")


def proof_line(job_id: str, proof: dict, complete: bool) -> str:
    """The proof pass's counts in one line, and where its sentences are listed."""
    from narrate.jobs.api.proof_report import counts_of, summary_line

    counts = counts_of(proof, complete)
    return summary_line(counts) + (f"; narrate proof {job_id} lists them" if complete and counts["flagged"] else "")


@click.command()
@click.argument("job_id")
@click.option("-o", "--output", "dest", required=True, help="Where to write it here: a file, or a folder to put it in.")
@click.option("--via-redis", is_flag=True, help="Through Redis even when the output's path is visible here.")
@click.option("--overwrite", is_flag=True, help="Replace the file at -o if there is one.")
def fetch(job_id, dest, via_redis, overwrite) -> None:
    """Copy a finished job's output here (through Redis when another host wrote it)."""
    from narrate.jobs.api.unfinished import not_finished
    from narrate.jobs.fanout.fetch import fetch as fetch_output

    settings = settings_from_env()
    try:
        with Connection(settings) as conn:
            refused = not_finished(conn.redis, job_id, "fetch")  # its state in words: failed (why), running, ...
            if refused is not None:
                raise refused
            path, how = fetch_output(settings, conn.redis, job_id, dest, via_redis, overwrite)
    except (NarrateError, redis.RedisError, OSError) as e:
        raise fail(e) from None
    click.echo(f"{path} ({'copied from this host' if how == 'local' else 'through Redis from its host'})")


@click.command()
@click.argument("job_ids", nargs=-1)
@click.option("--queue", "queue_name", default=None, help="Queue to look in (NARRATE_QUEUE).")
@one_line_errors
def resume(job_ids, queue_name) -> None:
    """Requeue failed or abandoned jobs (all of the queue's, or JOB_IDS); they resume from their
    checkpoints."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        done = api.resume(conn.redis, list(job_ids), queue_name or settings.queue)
    for did in done:
        click.echo(f"{did.job_id}: {did}")
    if not done:
        click.echo("nothing to resume")
