"""Durable writes: narrate says a job is submitted only once the server's append-only file holds
it. A Redis/Valkey server acknowledges a write once it is in memory; with `appendfsync everysec`
it reaches the disk within a second, and when the AOF cannot be written (a full disk) the server
keeps acknowledging until it notices, then refuses writes with MISCONF. Nothing it acknowledged in
between survives a restart, so a submit waits for the fsync (WAITAOF) and fails if it does not
come. Servers without an AOF (RDB snapshots only, or none) are not asked: narrate cannot make
those durable and says nothing about it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import redis

from .errors import NarrateError

PROBE_KEY = "narrate:durability-probe"  # a counter each wait increments: the write whose fsync is awaited
WAIT_S = 10.0


class NotDurable(NarrateError):
    """The server cannot persist what it was given (its AOF cannot be written)."""


def wait_durable(r: redis.Redis, timeout_s: float = WAIT_S) -> None:
    """Return once every write the server has acknowledged so far is fsynced to its AOF; raise
    NotDurable when that cannot happen (the AOF cannot be written) within `timeout_s`. Returns at
    once on a server without an AOF (or one that does not let us ask: INFO or WAITAOF refused)."""
    try:
        if not int(r.info("persistence").get("aof_enabled", 0)):
            return
    except redis.ResponseError:  # INFO renamed or refused (some managed servers)
        return
    # The AOF is written in order: once a write of ours is fsynced, so is everything before it.
    # WAITAOF counts the writes of its own connection, hence one pipeline (one connection).
    with r.pipeline(transaction=False) as p:
        p.incr(PROBE_KEY)
        p.execute_command("WAITAOF", 1, 0, int(timeout_s * 1000))
        try:
            _, (local, _replicas) = p.execute()
        except redis.ResponseError as e:
            text, reason = str(e), _misconf(e)
            if reason is not None:
                raise NotDurable(not_durable_message(r, reason)) from None
            if "unknown command" in text.lower() or "appendonly is disabled" in text:
                return  # before Valkey/Redis 7.2, or the AOF was just turned off
            raise
    if int(local) < 1:
        raise NotDurable(not_durable_message(r, f"its append-only file was not synced within {timeout_s:.0f} s"))


@contextlib.contextmanager
def durable_writes(r: redis.Redis, timeout_s: float = WAIT_S) -> Iterator[None]:
    """The writes of the block, then wait_durable; a write the server refuses because it cannot
    persist (MISCONF) raises NotDurable too."""
    try:
        yield
    except redis.ResponseError as e:
        reason = _misconf(e)
        if reason is not None:
            raise NotDurable(not_durable_message(r, reason)) from None
        raise
    wait_durable(r, timeout_s)


def _misconf(e: redis.ResponseError) -> str | None:
    """The reason of a MISCONF refusal (e.g. "Errors writing to the AOF file: No space left on
    device"), also when redis-py wraps it ("Command # 1 (...) of pipeline caused error: ...")."""
    _, found, reason = str(e).partition("MISCONF ")
    return reason.splitlines()[0].strip() if found and reason.strip() else None


def not_durable_message(r: redis.Redis | None, reason: str) -> str:
    """One line: what is wrong (the server cannot persist), why, and what to do."""
    return (
        f"the Redis server cannot persist data ({reason}; disk full?), so what narrate just stored there "
        f"is not safe: free disk space in {_data_dir(r)}, then run the command again"
    )


def _data_dir(r: redis.Redis | None) -> str:
    try:
        found = r.config_get("dir").get("dir") if r is not None else None
    except redis.RedisError:  # CONFIG is refused on some managed servers
        found = None
    if isinstance(found, bytes):
        found = found.decode(errors="replace")
    return found or "the server's data directory"
