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
from narrate.jobs.errors import NarrateError

PROBE_KEY = "narrate:durability-probe"  # a counter each wait increments: the write whose fsync is awaited
WAIT_S = 10.0


class NotDurable(NarrateError):
    """The server cannot persist what it was given (its AOF cannot be written)."""

    code = "not_durable"


def wait_durable(r: redis.Redis, timeout_s: float = WAIT_S) -> None:
    """Return once every write the server has acknowledged so far is fsynced to its AOF; raise
    NotDurable when its AOF cannot be written, or is not fsynced within `timeout_s`. Returns at
    once on a server without an AOF, or one that does not let us check (INFO, WAITAOF or the
    probe key refused, a server older than 7.2). With `appendfsync no` the server leaves the
    fsync to its OS: then only a failed write to the AOF is an error."""
    info = _persistence(r)
    if info is None or not int(info.get("aof_enabled", 0)):
        return
    fsyncs = _fsync_policy(r) != "no"
    read_timeout = r.connection_pool.connection_kwargs.get("socket_timeout")
    if read_timeout:  # the reply must come before the client gives up reading
        timeout_s = max(0.1, min(timeout_s, read_timeout - 0.5))
    # The AOF is written in order: once a write of ours is fsynced, so is everything before it.
    # WAITAOF counts the writes of its own connection, hence one pipeline (one connection).
    with r.pipeline(transaction=False) as p:
        p.incr(PROBE_KEY)
        if fsyncs:
            p.execute_command("WAITAOF", 1, 0, int(timeout_s * 1000))
        try:
            results = p.execute()
        except redis.TimeoutError:
            results = [None, [0, 0]]
        except redis.ResponseError as e:
            reason = _misconf(e)
            if reason is not None:
                raise NotDurable(not_durable_message(r, reason)) from None
            text = str(e)
            if isinstance(e, redis.exceptions.NoPermissionError) or "unknown command" in text.lower():
                return  # an ACL that forbids it, or a server before Valkey/Redis 7.2
            if "appendonly is disabled" in text:
                return  # turned off meanwhile
            raise
    if fsyncs and int(results[1][0]) >= 1:
        return
    info = _persistence(r) or {}
    if info.get("aof_last_write_status", "ok") != "ok":
        raise NotDurable(not_durable_message(r, "its last write to its append-only file failed"))
    if fsyncs:
        raise NotDurable(not_durable_message(r, f"its append-only file was not synced within {timeout_s:.0f} s"))


def _persistence(r: redis.Redis) -> dict | None:
    try:
        return r.info("persistence")
    except redis.ResponseError:  # INFO renamed or refused (some managed servers)
        return None


def _fsync_policy(r: redis.Redis) -> str | None:
    try:
        value = r.config_get("appendfsync").get("appendfsync")
    except redis.ResponseError:  # CONFIG renamed or refused (some managed servers)
        return None
    return value.decode() if isinstance(value, bytes) else value


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


def memory_full(r: redis.Redis) -> str | None:
    """A sentence saying the server refuses writes because its memory is full (maxmemory reached
    with the noeviction policy: every write that needs memory is refused, so no job can record its
    progress or its failure), or None. One INFO round trip; a server that refuses INFO: None."""
    try:
        info = r.info("memory")
    except redis.ResponseError:
        return None
    limit, used = int(info.get("maxmemory") or 0), int(info.get("used_memory") or 0)
    if not limit or used < limit or str(info.get("maxmemory_policy", "")) != "noeviction":
        return None
    return (
        f"the Redis server is full ({used / 1e6:.0f} MB used of its maxmemory {limit / 1e6:.0f} MB, evicting nothing): "
        "it refuses writes, so running jobs cannot record progress or errors; free memory on it or raise its "
        "maxmemory, then `narrate resume`"
    )
