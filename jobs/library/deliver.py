"""Where an exported book goes: into a library folder (jobs/library/export.py), then, with an
Audiobookshelf address, a scan of its library; or, with only the address, uploaded to it from a
private folder under NARRATE_HOME that is removed afterwards. Used by `narrate export` and by the
worker at the end of a job submitted with `--library` or `--abs-url`."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from narrate.jobs.errors import BadInput
from narrate.jobs.library import audiobookshelf
from narrate.jobs.library.export import Exported, Found, export_files


@dataclass(frozen=True)
class Abs:
    url: str
    token: str | None
    library: str | None  # its id; None: the first book library


def deliver(
    found: Found, library: Path | None, layout: str, abs_server: Abs | None, home: Path, replaces: str | None = None
) -> tuple[Exported | None, str | None]:
    """(the library folder written, what Audiobookshelf was told). Raises NarrateError: an
    AbsError after the folder is in place says so. `replaces`: the job a redo redoes, whose folder
    this one replaces (jobs/library/export.py)."""
    if library is None and abs_server is None:
        raise BadInput("no library: give --library DIR (or set NARRATE_LIBRARY), or --abs-url URL")
    if library is not None:
        done = export_files(library, layout, *found, replaces=replaces)
        if abs_server is None:
            return done, None
        try:
            told = audiobookshelf.push(
                abs_server.url, abs_server.token, abs_server.library, found[0], done.folder, in_library=True
            )
        except audiobookshelf.AbsError as e:
            raise audiobookshelf.AbsError(f"{done.note} to {done.folder}, but {e}") from None
        return done, told
    assert abs_server is not None
    staging = Path(home).expanduser() / "exports"
    staging.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = Path(tempfile.mkdtemp(prefix="up-", dir=staging))
    try:
        done = export_files(tmp, "flat", *found)
        told = audiobookshelf.push(
            abs_server.url, abs_server.token, abs_server.library, found[0], done.folder, in_library=False
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return None, told
