"""The bounds of a request's numbers, declared once (pydantic's ``Annotated`` constraints): the request
model (jobs/api/fields.py) validates what a caller sends with them, and the job spec
(jobs/book/spec.py) what a worker reads back from Redis."""

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
