"""When a scheduled job is due: ``submit --at TIME`` (ISO 8601, local time unless it carries an
offset) or ``--in 2h`` / ``90m`` / ``30s`` / ``1h30m``. Both give an aware UTC datetime, checked to
lie in the future (and within MAX_AHEAD). A local time that a daylight-saving change skips or
repeats is refused rather than guessed."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from narrate.jobs.api.fields import CLI, spelled
from narrate.jobs.errors import BadInput

MAX_AHEAD = timedelta(days=365)
_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"(\d+)\s*([dhms])")
_DURATION_FORM = "a whole number with a unit: 30s, 90m, 2h, 1d, or combined: 1h30m"


def due(at: str | None, delay: str | None, now: datetime | None = None, spelling: str = CLI) -> datetime | None:
    """The due time from `--at` or `--in` (None: run as soon as a worker is free); an error names the field as
    `spelling` spells it."""
    at_name, in_name = spelled("at", spelling), spelled("in", spelling)
    if at is not None and delay is not None:
        raise BadInput(f"give {at_name} or {in_name}, not both", param="in")
    try:
        if at is not None:
            return _whole_second(parse_at(at, now, at_name))
        if delay is not None:
            return _whole_second(parse_in(delay, now, in_name))
    except BadInput as e:
        e.param = "at" if at is not None else "in"
        raise
    return None


def _whole_second(when: datetime) -> datetime:
    """Rounded up to the second: rq's scheduled registry keeps whole seconds, and a job must not
    run (or be said to be due) before the time asked for."""
    return when.replace(microsecond=0) + timedelta(seconds=1) if when.microsecond else when


def parse_in(text: str, now: datetime | None = None, option: str = "--in") -> datetime:
    """`--in`: a positive duration with units, from now."""
    raw = text.strip().lower()
    parts = _DURATION.findall(raw)
    if not raw or _DURATION.sub("", raw).strip() or not parts:
        hint = " (a negative delay is not a time to come)" if raw.startswith("-") else ""
        raise BadInput(f"{option} {text!r} is not a delay{hint}: use {_DURATION_FORM}")
    seconds = sum(int(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise BadInput(
            f"{option} {text!r} is no delay at all: use a positive one ({_DURATION_FORM}), or leave {option} out"
        )
    if seconds > MAX_AHEAD.total_seconds():
        raise BadInput(f"{option} {text!r} is more than {MAX_AHEAD.days} days ahead; schedule it nearer the time")
    return (now or datetime.now(UTC)) + timedelta(seconds=seconds)


def parse_at(text: str, now: datetime | None = None, option: str = "--at") -> datetime:
    """`--at`: an ISO 8601 date and time; without an offset it is this machine's local time."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadInput(
            f"{option} {text!r} is not a date and time: use ISO 8601 such as 2026-12-01T02:00 (local time) "
            "or 2026-12-01T02:00+01:00"
        ) from None
    try:
        when = (_local(when, text, option) if when.tzinfo is None else when).astimezone(UTC)
    except (OverflowError, OSError, ValueError):  # a year the platform's clock cannot convert
        raise BadInput(f"{option} {text!r} is too far from now; schedule it nearer the time") from None
    now = now or datetime.now(UTC)
    if when <= now:
        raise BadInput(f"{option} {text!r} is in the past (it is {now.astimezone():%Y-%m-%dT%H:%M:%S%z} now)")
    if when - now > MAX_AHEAD:
        raise BadInput(f"{option} {text!r} is more than {MAX_AHEAD.days} days ahead; schedule it nearer the time")
    return when


def _local(naive: datetime, text: str, option: str) -> datetime:
    """A naive wall-clock time in this machine's zone; refused when a DST change skips or repeats it."""
    first, second = naive.replace(fold=0).astimezone(), naive.replace(fold=1).astimezone()
    if first == second:
        return first
    if all(t.replace(tzinfo=None) == naive for t in (first, second)):
        raise BadInput(
            f"{option} {text!r} happens twice in local time (the clocks go back for daylight saving); "
            f"add the offset you mean: {_offset(first)} or {_offset(second)}"
        )
    raise BadInput(
        f"{option} {text!r} does not exist in local time (the clocks skip it for daylight saving); "
        f"give another time, or an offset such as {_offset(first)}"
    )


def _offset(t: datetime) -> str:
    """+01:00, as ISO 8601 writes it."""
    z = t.strftime("%z")
    return f"{z[:3]}:{z[3:]}"


def describe(when: datetime) -> str:
    """A due time as a person reads it: local time with its offset."""
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S%z")
