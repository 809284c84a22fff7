"""A book's chapters playable while the rest is read (jobs/audio/previews.py makes them): which are
ready, the file of one on this host, and their removal with the job."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import redis
from narrate.jobs.audio import previews
from narrate.jobs.settings import Settings
from rq.job import Job


def ready(r: redis.Redis, job_id: str) -> set[int]:
    """The chapter numbers (from 1) playable now."""
    return set(previews.recorded(r, job_id))


def chapter_file(r: redis.Redis, settings: Settings, job_id: str, number: int) -> Path | None:
    """Chapter `number`'s audio on this host: only the file the job recorded, in its preview folder
    under the output root, no link followed; None when there is none (yet, or any more)."""
    record = previews.recorded(r, job_id).get(number)
    if record is None:
        return None
    root = Path(os.path.realpath(settings.output_dir))
    rel = PurePosixPath(str(record.get("path", "")))
    if rel.is_absolute() or ".." in rel.parts or not rel.parent.name == f".narrate-preview-{job_id}":
        return None
    path = root / rel
    if Path(os.path.realpath(path)) != path or not path.is_file():
        return None
    return path


def forget(r: redis.Redis, settings: Settings, job: Job) -> None:
    """Remove the job's previews (their files and record), e.g. when it is deleted."""
    spec = job.args[0] if job.args and isinstance(job.args[0], dict) else {}
    output = spec.get("output")
    if isinstance(output, str) and output:
        previews.remove(r, settings.output_dir, job.id, output)
    else:
        r.delete(previews.preview_key(job.id))
