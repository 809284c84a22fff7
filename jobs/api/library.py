"""`narrate export`: a finished job's book into a library folder (jobs/library)."""

from __future__ import annotations

from pathlib import Path

import redis
from narrate.jobs.errors import BadInput
from narrate.jobs.library.export import Exported, export
from narrate.jobs.settings import Settings


def export_book(r: redis.Redis, settings: Settings, job_id: str, library: Path | None, layout: str) -> Exported:
    root = library if library is not None else settings.library
    if root is None:
        raise BadInput("no library: give --library DIR, or set NARRATE_LIBRARY to your audiobook library's folder")
    return export(r, job_id, Path(root), layout)
