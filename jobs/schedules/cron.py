"""Cron expressions and time zones for recurring schedules (croniter does the arithmetic).

A schedule's expression is read in the time zone it was added in (an IANA name stored with it), so
every host runs it at the same moments whatever its own zone. Tick times are Unix timestamps.
"""

from __future__ import annotations

import os
import re
import time
from datetime import datetime
from typing import cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter
from narrate.jobs.errors import BadInput

_RANDOM = re.compile(r"(?<![a-z])r(?![a-z])", re.IGNORECASE)  # R, R(0-30), 1,R: not fri, mar, apr
ALIASES = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
# A last tick this far ahead of the clock means the clock went back (a host's clock was wrong when
# it ran that tick); less than this is taken for skew between hosts.
CLOCK_BACK_S = 15 * 60


def check_cron(expr: str) -> str:
    """The expression, normalized (single spaces), or BadInput saying what a valid one looks like."""
    expr = " ".join(expr.split())
    fields = expr.split(" ")
    if expr.lower() in ALIASES:
        return expr.lower()
    if any(_RANDOM.search(f) for f in fields):  # croniter's R: a random value
        raise BadInput(
            f"cron expression {expr!r}: a random field (R) is not supported: its time would change at every "
            'tick (it fired over a hundred times a day); give fixed values, e.g. "17 2 * * *"'
        )
    if len(fields) != 5 or not croniter.is_valid(expr):
        raise BadInput(
            f"cron expression {expr!r} is not valid: give five fields, minute hour day-of-month month "
            'day-of-week, e.g. "0 2 * * *" for 2 am every day (or @daily, @hourly, ...)'
        )
    return expr


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadInput(f"unknown time zone {name!r}: give an IANA name such as Europe/Berlin or UTC") from None


def local_zone() -> str:
    """This host's time zone as an IANA name (TZ, else the /etc/localtime link that Linux and macOS
    keep), checked against the offset the C library uses now; BadInput when it cannot be told."""
    candidates = []
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz:
        candidates.append(tz)
    try:
        link = os.readlink("/etc/localtime")
    except OSError:
        link = ""
    if "zoneinfo/" in link:
        candidates.append(link.split("zoneinfo/", 1)[1])
    if not tz and not link:
        candidates.append("UTC")  # no zone configured at all: the C library uses UTC
    offset = time.localtime().tm_gmtoff
    for name in candidates:
        try:
            z = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            continue
        if datetime.now(z).utcoffset().total_seconds() == offset:  # type: ignore[union-attr]
            return name
    raise BadInput("cannot tell this host's time zone by name; pass --tz (an IANA name such as Europe/Berlin)")


def previous_tick(expr: str, tz: str, now: float) -> float:
    """The latest time at or before `now` the expression names (-inf if none in the past)."""
    start = datetime.fromtimestamp(now, zone(tz))
    it = croniter(expr, start)
    try:
        if croniter.match(expr, start.replace(microsecond=0)) and start.second == 0:
            return start.replace(microsecond=0).timestamp()
        return cast(float, it.get_prev(float))  # croniter is untyped
    except CroniterBadDateError:
        return float("-inf")


def next_tick(expr: str, tz: str, now: float) -> float | None:
    """The first time after `now` the expression names (None: never, e.g. February 31)."""
    try:
        return cast(float, croniter(expr, datetime.fromtimestamp(now, zone(tz))).get_next(float))  # croniter is untyped
    except CroniterBadDateError:
        return None


def due_tick(expr: str, tz: str, now: float, last_tick: float) -> float | None:
    """The tick to run now, or None: the latest one at or before `now`, if it is after the last tick
    run. However many ticks were missed, that is one tick (a catch-up), not one per missed tick."""
    prev = previous_tick(expr, tz, now)
    return prev if prev > last_tick else None


def clock_went_back(now: float, last_tick: float) -> bool:
    return last_tick > now + CLOCK_BACK_S


def show(ts: float | None, tz: str) -> str:
    """A tick time for people: local to the schedule's zone, to the minute."""
    if ts is None:
        return "never"
    return datetime.fromtimestamp(ts, zone(tz)).strftime("%Y-%m-%d %H:%M %Z")
