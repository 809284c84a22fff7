"""`narrate export`: a finished job's book into a library folder and/or an Audiobookshelf server
(jobs/library)."""

from __future__ import annotations

from pathlib import Path

import redis
from narrate.jobs.library.audiobookshelf import check_url
from narrate.jobs.library.deliver import Abs, deliver
from narrate.jobs.library.export import Exported, book_info
from narrate.jobs.library.layout import check_layout
from narrate.jobs.settings import Settings


def export_book(r: redis.Redis, settings: Settings, job_id: str, library: Path | None, layout: str,
                abs_url: str | None = None) -> tuple[Exported | None, str | None]:  # fmt: skip
    """(the library folder, what Audiobookshelf was told); NARRATE_LIBRARY and NARRATE_ABS_URL are
    the defaults."""
    root = library if library is not None else settings.library
    url = abs_url or settings.abs_url
    server = Abs(check_url(url), settings.abs_token, settings.abs_library) if url else None
    check_layout(layout)
    if root is not None and not Path(root).expanduser().is_dir():
        from narrate.jobs.errors import BadInput

        raise BadInput(f"library {root} is not a folder; create it, or name the library's folder")
    root_path = Path(root).expanduser() if root is not None else None
    return deliver(book_info(r, settings.output_dir, job_id), root_path, layout, server, settings.home)
