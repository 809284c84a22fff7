"""The bounds of a request's numbers and its lists of formats, declared once (pydantic's ``Annotated``
constraints): the request model (jobs/api/fields.py) validates what a caller sends with them, and the job
spec (jobs/book/spec.py) what a worker reads back from Redis."""

from __future__ import annotations

from typing import Annotated, Literal

from narrate.jobs.settings import MAX_FRAMES_CAP, MAX_PAUSE_MS
from pydantic import Field

MAX_SEED = 2**63 - 1

Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
Frames = Annotated[int, Field(ge=1, le=MAX_FRAMES_CAP)]
PauseMs = Annotated[int, Field(ge=0, le=MAX_PAUSE_MS)]
Lufs = Annotated[float, Field(ge=-40, le=-5, allow_inf_nan=False)]
Hours = Annotated[float, Field(gt=0, allow_inf_nan=False)]
MAX_RETAKES = 5
Retakes = Annotated[int, Field(ge=0, le=MAX_RETAKES)]  # the proof pass's takes of a flagged sentence besides its first
Layout = Literal["abs", "plex", "flat"]  # a library export's folder names (jobs/library/layout.py)
SUBTITLE_FORMATS = ("srt", "vtt", "json")  # files beside the audio (jobs/audio/subtitles.py)
# jobs/readalong: an EPUB 3 with media overlays, a Readium audiobook manifest, a W3C Audiobooks manifest
READALONG_FORMATS = ("epub", "manifest", "w3c")


def format_list(value: str | None, allowed: tuple[str, ...], what: str = "format") -> str:
    """'w3c, EPUB' -> 'epub,w3c': the formats asked for, in `allowed`'s order ("" for none); ValueError
    naming the first unknown one."""
    asked = [v.strip().lower() for v in (value or "").split(",") if v.strip()]
    unknown = [v for v in asked if v not in allowed]
    if unknown:
        raise ValueError(f"unknown {what} {unknown[0]!r}; use one or more of {','.join(allowed)}")
    return ",".join(f for f in allowed if f in asked)
