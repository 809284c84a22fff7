"""Looking after jobs: `narrate status` and `narrate resume`."""

from __future__ import annotations

import json
from pathlib import Path

import click
import redis
from narrate.jobs import api
from narrate.jobs.connection import Connection
from narrate.jobs.errors import NarrateError

from .common import fail, settings_from_env


@click.command()
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--follow", is_flag=True, help="Redraw its progress until it ends (as `narrate watch`).")
def status(job_id, as_json, follow) -> None:
    """Show a job's status, progress, output path or error."""
    if follow:
        from .queue_ops import follow as follow_job

        follow_job(job_id)
        return
    settings = settings_from_env()
    try:
        with Connection(settings) as conn:
            st = api.status(conn.redis, job_id)
    except (NarrateError, redis.RedisError) as e:
        raise fail(e) from None
    if as_json:
        click.echo(json.dumps(st))
        return
    p = st["progress"]
    click.echo(f"{st['id']}: {st['status']} ({p.get('done', 0)}/{p.get('total', 0)} sentences)")
    if st["status"] in ("started", "scheduled"):
        from .queue_ops import progress_line

        click.echo(f"progress: {progress_line(st)}")
    if st.get("output"):
        click.echo(f"output: {st['output']} ({st.get('duration_seconds', 0):.1f} s)")
    result = st.get("result") or {}
    if "reused" in result:
        click.echo(f"sentences: {result['synthesized']} synthesized, {result['reused']} reused from the cache")
    if st.get("output_replaced_by"):
        click.echo(f"note: its output was replaced since by job {st['output_replaced_by']}")
    if st.get("parts"):
        done = sum(p["status"] == "finished" for p in st["parts"])
        hosts = f"; hosts at work: {len(st['hosts'])}" if st.get("hosts") else ""
        click.echo(f"parts: {done}/{len(st['parts'])} finished{hosts}")
    if st.get("error"):
        click.echo(f"error: {st['error']}")


@click.command()
@click.argument("job_id")
@click.option("-o", "--output", "dest", required=True, type=click.Path(path_type=Path), help="Where to write it here.")
@click.option("--via-redis", is_flag=True, help="Through Redis even when the output's path is visible here.")
def fetch(job_id, dest, via_redis) -> None:
    """Copy a finished job's output here (through Redis when another host wrote it)."""
    from narrate.jobs.fetch import fetch as fetch_output

    settings = settings_from_env()
    try:
        with Connection(settings) as conn:
            how = fetch_output(settings, conn.redis, job_id, dest, via_redis)
    except (NarrateError, redis.RedisError, OSError) as e:
        raise fail(e) from None
    click.echo(f"{dest} ({'copied from this host' if how == 'local' else 'through Redis from its host'})")


@click.command()
@click.argument("job_ids", nargs=-1)
@click.option("--queue", "queue_name", default=None, help="Queue to look in (NARRATE_QUEUE).")
def resume(job_ids, queue_name) -> None:
    """Requeue failed or abandoned jobs (all of the queue's, or JOB_IDS); they resume from their
    checkpoints."""
    settings = settings_from_env()
    try:
        with Connection(settings) as conn:
            done = api.resume(conn.redis, list(job_ids), queue_name or settings.queue)
    except (NarrateError, redis.RedisError) as e:
        raise fail(e) from None
    for job_id, what in done:
        click.echo(f"{job_id}: {what}")
    if not done:
        click.echo("nothing to resume")
