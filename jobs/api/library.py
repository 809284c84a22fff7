"""`narrate export`: a finished job's book into a library folder and/or an Audiobookshelf server
(jobs/library)."""

from __future__ import annotations

from pathlib import Path

import redis
from narrate.jobs.api.unfinished import not_finished
from narrate.jobs.library.audiobookshelf import check_url
from narrate.jobs.library.deliver import Abs, deliver
from narrate.jobs.library.export import Exported, book_info, check_library
from narrate.jobs.library.layout import check_layout
from narrate.jobs.settings import Settings


def export_book(
    r: redis.Redis, settings: Settings, job_id: str, library: Path | None, layout: str, abs_url: str | None = None
) -> tuple[Exported | None, str | None]:
    """(the library folder, what Audiobookshelf was told); NARRATE_LIBRARY and NARRATE_ABS_URL are
    the defaults."""
    root = library if library is not None else settings.library
    url = abs_url or settings.abs_url
    server = Abs(check_url(url), settings.abs_token, settings.abs_library) if url else None
    check_layout(layout)
    folder = check_library(root) if root is not None else None  # before the job is read: the cheap check first
    refused = not_finished(r, job_id, "export")  # its state in words: failed (why), canceled, still running, ...
    if refused is not None:
        raise refused
    return deliver(book_info(r, settings.output_dir, job_id), folder, layout, server, settings.home)
