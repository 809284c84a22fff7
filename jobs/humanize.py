"""Times for people, one way everywhere: the CLI's compact durations (``3m05s``), the pages' spelled
ones (``3 min 05 s``) and chapter clocks (``1:02:03``)."""

from __future__ import annotations


def duration(seconds: float | None, spelled: bool = False) -> str:
    """42s, 3m05s, 2h07m (spelled: 42 s, 3 min 05 s, 2 h 07 min); "-" when unknown."""
    if seconds is None:
        return "-"
    s = max(0, int(round(seconds)))
    sec, mins, hours = ("s", "min", "h") if spelled else ("s", "m", "h")
    gap = " " if spelled else ""
    if s < 60:
        return f"{s}{gap}{sec}"
    if s < 3600:
        return f"{s // 60}{gap}{mins}{gap}{s % 60:02d}{gap}{sec}"
    return f"{s // 3600}{gap}{hours}{gap}{s % 3600 // 60:02d}{gap}{mins}"


def clock(seconds: float) -> str:
    """1:02:03 (hours:minutes:seconds)."""
    s = round(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
