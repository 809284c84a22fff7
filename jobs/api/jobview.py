"""One read model of narrate's jobs for every front end (the CLI, the HTTP API, the pages): a job
(`get`), every job of the queues (`list_all`), the finished ones with their results (`finished`), their
files (`files`) and removing an ended one (`delete`). Reading many jobs takes a bounded number of
Redis round trips whatever their number: `list_all` two, `finished` two, `files` two (each job's index
of the paths it wrote, jobs/outputs/recorded.py, then their records); no view scans the keyspace."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path, PurePosixPath
from typing import Any

import redis
from narrate.jobs.api import chapter_previews
from narrate.jobs.api.listing import list_jobs
from narrate.jobs.api.record import JobRecord, read_records, with_results
from narrate.jobs.api.status import status
from narrate.jobs.feeds import store as feeds
from narrate.jobs.outputs import ownership, recorded
from narrate.jobs.outputs.recorded import OutputFile
from narrate.jobs.queue.states import State
from narrate.jobs.server.records import fetch
from narrate.jobs.settings import Settings
from rq.job import Job


class JobView:
    """The jobs of one server as this host sees them (its output root)."""

    def __init__(self, r: redis.Redis, settings: Settings) -> None:
        self.r = r
        self.settings = settings
        self.root = Path(settings.output_dir)

    def get(self, job_id: str) -> dict[str, Any]:
        """One job's status (jobs/api/status.py; JobNotFound if there is none)."""
        return status(self.r, job_id)

    def list_all(self, state: str | None = None) -> list[dict[str, Any]]:
        """Every job of the server's queues, newest first (`narrate list`): two round trips."""
        return list_jobs(self.r, self.settings.queue, self.root, state)

    def finished(self, job_ids: list[str]) -> dict[str, JobRecord]:
        """The finished jobs among `job_ids` with their results: two round trips (the job records, then
        each one's latest result); a job gone meanwhile, not finished or without a result is left out."""
        done = [rec for rec in read_records(self.r, job_ids).values() if rec.status == State.FINISHED]
        return {rec.id: rec for rec in with_results(self.r, done) if rec.result is not None}

    def files(self, finished: list[JobRecord]) -> dict[str, list[OutputFile]]:
        """The files each finished job wrote that lie here: two round trips for all of them."""
        pairs = [(rec.id, str(rec.result.get("output_relative") or "")) for rec in finished if rec.result]
        found = recorded.recorded_many(self.r, self.root, [(i, rel) for i, rel in pairs if rel])
        return {rec.id: found.get(rec.id, []) for rec in finished}

    def delete(self, job_id: str) -> list[str]:
        """Remove an ended job: its files that still hold what it wrote (their names), its parts, its
        chapter previews, its place in a feed, its index of files and its record."""
        job = fetch(self.r, job_id)  # JobNotFound: deleted by someone else before this
        removed: list[str] = []
        result = job.return_value() if job.get_status(refresh=False) is not None else None
        if isinstance(result, dict) and result.get("output_relative"):
            removed = remove_files(self.r, self.root, job_id, result["output_relative"])
        for part in (job.meta or {}).get("parts") or []:
            if self.r.exists(Job.key_for(part)):
                fetch(self.r, part).delete()
        chapter_previews.forget(self.r, self.settings, job)
        job.delete()
        feeds.forget(self.r, job_id)
        recorded.forget(self.r, job_id)
        return removed


def remove_files(r: redis.Redis, root: Path, job_id: str, output_relative: str) -> list[str]:
    """Delete the job's recorded files that still hold what it wrote (a file replaced or edited since
    is left alone); their names."""
    removed = []
    beside = Path(os.path.realpath(Path(root) / PurePosixPath(output_relative).parent))
    for f in recorded.recorded(r, root, job_id, output_relative):
        if f.sha256 and ownership.sha256_file(f.path) != f.sha256:
            continue
        f.path.unlink(missing_ok=True)
        removed.append(f.name)
        if f.path.parent != beside and f.path.parent.is_relative_to(beside):
            with contextlib.suppress(OSError):  # a chapter folder the job made, once empty
                f.path.parent.rmdir()
    return removed
