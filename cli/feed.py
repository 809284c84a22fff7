"""`narrate feed ...`: podcast feeds of finished narrations (`submit --feed NAME`), served by `narrate serve`."""

from __future__ import annotations

import json

import click
from narrate.cli.common import one_line_errors, settings_from_env
from narrate.jobs.api import feed_actions as api
from narrate.jobs.counts import count
from narrate.jobs.server.connection import Connection


@click.group(name="feed")
def feed_group() -> None:
    """Podcast feeds: `submit --feed NAME` (or `schedule add --feed NAME`) puts a narration in feed NAME;
    `narrate serve` serves it as RSS at /feeds/NAME.xml for podcast apps. Each URL carries the feed's
    token (required once the server has NARRATE_API_KEY); the URLs begin with NARRATE_PUBLIC_URL."""


@feed_group.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per feed.")
@one_line_errors
def list_(as_json) -> None:
    """Every feed: name, narrations in it, URL."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        rows = api.list_feeds(conn.redis, settings)
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    if not rows:
        click.echo("no feeds yet: narrate submit DOC --voice ... --feed NAME", err=True)
    for row in rows:
        click.echo(f"{row['name']}: {count(row['narrations'], 'narration')}  {row['url']}")


@feed_group.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@one_line_errors
def show(name, as_json) -> None:
    """A feed's URL and its narrations, newest first (only finished ones are episodes)."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        row = api.show(conn.redis, settings, name)
    if as_json:
        click.echo(json.dumps(row))
        return
    click.echo(f"{row['name']} ({row['title']}): {row['url']}")
    for item in row["items"]:
        click.echo(f"  {item['id']}  {item['status']:<9} {item['document'] or ''}")


@feed_group.command()
@click.argument("name")
@one_line_errors
def revoke(name) -> None:
    """Give the feed a new token: every URL handed out before answers 404; prints the new one."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        row = api.revoke(conn.redis, settings, name)
    click.echo(f"{row['name']}: the old URL is revoked; the new one is {row['url']}")


@feed_group.command()
@click.argument("name")
@one_line_errors
def remove(name) -> None:
    """Remove the feed (its narrations and their files stay)."""
    settings = settings_from_env()
    with Connection(settings) as conn:
        click.echo(f"removed feed {api.remove(conn.redis, name)}")
