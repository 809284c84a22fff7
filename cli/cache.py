"""`narrate cache info` and `narrate cache prune`: the sentence cache of this host (jobs.book.cache)."""

from __future__ import annotations

import json
from datetime import datetime

import click
from narrate.cli.common import fail, settings_from_env
from narrate.jobs.book import cache
from narrate.jobs.errors import NarrateError


def size(n: int) -> str:
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def when(epoch: float | None) -> str:
    return datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M:%S") if epoch else "-"


@click.group("cache")
def cache_group() -> None:
    """The sentence cache of this host: finished sentences kept so that resubmitted or edited books
    synthesize only what changed (NARRATE_CACHE_MAX_GB)."""


@cache_group.command("info")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def cache_info(as_json) -> None:
    """Size, sentence count, cap, oldest and newest use, and where it is."""
    settings = settings_from_env()
    got = cache.info(settings.home / "checkpoints", cache.cap_bytes(settings.cache_max_gb))
    if as_json:
        click.echo(json.dumps(got.to_json()))
        return
    cap = size(got.cap_bytes) if got.cap_bytes else "0 (checkpoints deleted after each job)"
    click.echo(f"path: {got.path}")
    click.echo(f"sentences: {got.count}")
    click.echo(f"size: {size(got.bytes)}")
    click.echo(f"cap: {cap} (NARRATE_CACHE_MAX_GB)")
    click.echo(f"oldest use: {when(got.oldest_use)}")
    click.echo(f"newest use: {when(got.newest_use)}")


@cache_group.command("prune")
@click.option(
    "--to", "to_size", default=None, metavar="SIZE", help="Evict the least recently used down to SIZE (500MB, 2GB)."
)
@click.option("--all", "everything", is_flag=True, help="Remove every cached sentence.")
@click.option(
    "--older-than",
    type=click.FloatRange(min=0),
    default=None,
    metavar="DAYS",
    help="Remove sentences not used for DAYS days.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def cache_prune(to_size, everything, older_than, as_json) -> None:
    """Remove cached sentences: least recently used first down to --to SIZE, --all of them, or those
    unused --older-than DAYS (without options: down to the cap). A running job synthesizes again
    what is removed under it."""
    if everything and to_size is not None:
        raise click.ClickException("--all and --to exclude each other: choose one")
    settings = settings_from_env()
    try:
        target = 0 if everything else cache.parse_size(to_size) if to_size is not None else None
    except NarrateError as e:
        raise fail(e) from None
    if target is None and older_than is None:
        target = cache.cap_bytes(settings.cache_max_gb)
    older_s = older_than * 86400 if older_than is not None else None
    got = cache.prune(settings.home / "checkpoints", to_bytes=target, older_than_s=older_s)
    if as_json:
        click.echo(json.dumps(got.to_json()))
        return
    removed = f"{got.count} sentence{'' if got.count == 1 else 's'}"
    click.echo(f"removed {removed} ({size(got.bytes)}); {got.left_count} left ({size(got.left_bytes)})")
