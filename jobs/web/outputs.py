"""A job's files as the HTTP API serves them: exactly the files the job recorded writing
(jobs/outputs/recorded.py: the output ownership records, found through the job's index of paths
``narrate:job-files:ID``) that lie under this host's output root, named relative to the book's
folder (the book file, its subtitles and manifest, its chapter files and parts). Nothing else under
the root is ever served; `DELETE` removes only these, and only while each is still the content the
job wrote (jobs/api/jobview.py `remove_files`)."""

from __future__ import annotations

from pathlib import Path

from narrate.jobs.api.jobview import remove_files as remove
from narrate.jobs.outputs.recorded import AUDIO, OutputFile, recorded
from narrate.jobs.server.store import text

__all__ = ["AUDIO", "OutputFile", "duration_s", "recorded", "remove", "text"]


def duration_s(path: Path) -> float | None:
    """An audio file's duration (from its header), None for any other file."""
    if path.suffix.lower() not in AUDIO:
        return None
    try:
        import mutagen

        info = mutagen.File(str(path))  # mutagen's File is untyped
        return round(float(info.info.length), 3) if info is not None else None
    except Exception:  # noqa: BLE001 - a file mutagen cannot read has no duration to show
        return None
