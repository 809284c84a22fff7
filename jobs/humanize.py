"""Times for people, one way everywhere: the CLI's compact durations (``3m05s``), the pages' spelled
ones (``3 min 05 s``: an ETA on the Queue and Job pages alike) and chapter clocks (``1:02:03``).
Seconds round half up, as the pages' script (jobs/web/static/narrate.js ``spelled``) rounds them
when it updates a figure live: the same figure reads the same in both."""

from __future__ import annotations

import math


def whole_seconds(seconds: float) -> int:
    """Seconds rounded half up (JavaScript's Math.round), never below 0."""
    return max(0, math.floor(seconds + 0.5))


def duration(seconds: float | None, spelled: bool = False) -> str:
    """42s, 3m05s, 2h07m (spelled: 42 s, 3 min 05 s, 2 h 07 min); "-" when unknown."""
    if seconds is None:
        return "-"
    s = whole_seconds(seconds)
    sec, mins, hours = ("s", "min", "h") if spelled else ("s", "m", "h")
    gap = " " if spelled else ""
    if s < 60:
        return f"{s}{gap}{sec}"
    if s < 3600:
        return f"{s // 60}{gap}{mins}{gap}{s % 60:02d}{gap}{sec}"
    return f"{s // 3600}{gap}{hours}{gap}{s % 3600 // 60:02d}{gap}{mins}"


def clock(seconds: float) -> str:
    """1:02:03 (hours:minutes:seconds)."""
    s = whole_seconds(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def moment(seconds: float | None) -> str:
    """A place in a book, to the tenth of a second: 2:03.4, 1:02:03.4 (hours only when there are any); "-"
    when unknown."""
    if seconds is None:
        return "-"
    tenths = max(0, math.floor(float(seconds) * 10 + 0.5))
    h, rest = divmod(tenths, 36000)
    m, rest = divmod(rest, 600)
    s, t = divmod(rest, 10)
    return f"{h}:{m:02d}:{s:02d}.{t}" if h else f"{m}:{s:02d}.{t}"
