"""The indexes narrate keeps beside its records, so that no request scans the keyspace, and the one-time
build of an index over what was written before it existed, behind a version in ``narrate:schema`` (a hash:
index name -> the version built). The first caller that finds an index unbuilt builds it under a lock
(one host builds it, the others wait and then read it); every later caller pays one field of a hash,
usually read in a pipeline it makes anyway."""

from __future__ import annotations

from collections.abc import Callable

import redis
from narrate.jobs.server.store import PREFIX, text

SCHEMA = f"{PREFIX}schema"
BUILD_LOCK_S = 600  # a build of a huge keyspace may take this long before another host may try


def built(raw: object, version: int) -> bool:
    """Whether the schema field read (bytes, str or None) says the index is at `version`."""
    return raw is not None and text(raw) == str(version)  # type: ignore[arg-type]


def ensure(r: redis.Redis, name: str, version: int, build: Callable[[redis.Redis], None]) -> None:
    """Build index `name` at `version` with `build` (a scan, once) unless the schema says it is built."""
    if built(r.hget(SCHEMA, name), version):
        return
    with r.lock(f"{SCHEMA}:build:{name}", timeout=BUILD_LOCK_S, blocking_timeout=BUILD_LOCK_S):
        if built(r.hget(SCHEMA, name), version):
            return  # another caller built it while this one waited
        build(r)
        r.hset(SCHEMA, name, str(version))
