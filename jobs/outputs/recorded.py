"""The files a job recorded writing (the output ownership records, jobs/outputs/ownership.py:
``narrate:output:<path>`` names the job that wrote each path) that lie under this host's output
root: the book file, its subtitles and manifest, its chapter files and parts. What the HTTP API
serves and deletes (jobs/web/outputs.py) and what a library export copies (jobs/library)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import redis
from narrate.jobs.outputs import ownership
from narrate.jobs.outputs.outputs import FORMATS
from narrate.jobs.server import schema
from narrate.jobs.server.store import text
from narrate.jobs.settings import DAY_S, default

AUDIO = frozenset(FORMATS)  # the audio files a job writes (by extension); the rest are subtitles and manifests
_GLOB = str.maketrans({c: f"\\{c}" for c in "*?[]\\"})


@dataclass(frozen=True)
class OutputFile:
    name: str  # relative to the folder of the book's file: "book.mp3", "book.srt", "book/01 - One.mp3"
    relative: str  # relative to the output root
    path: Path
    bytes: int
    sha256: str


def recorded(r: redis.Redis, root: Path, job_id: str, output_relative: str) -> list[OutputFile]:
    """The files job `job_id` wrote beside and under its output `output_relative` (every name that
    starts with the output's stem: book.mp3, book.srt, book/..., book - Part 2.mp3), that still hold
    what it wrote there last (the record names it) and exist here."""
    return recorded_many(r, root, [(job_id, output_relative)])[job_id]


def recorded_many(r: redis.Redis, root: Path, jobs: list[tuple[str, str]]) -> dict[str, list[OutputFile]]:
    """``recorded`` for many jobs ((job id, output relative) pairs) in two round trips whatever their
    number: one reads each job's index of paths (ownership.files_key), one the records of every path
    found. Jobs written before the index existed were indexed once (``index_old_records``, behind the
    schema version read in the first round trip): no request scans the keyspace."""
    with r.pipeline(transaction=False) as p:
        p.hget(schema.SCHEMA, FILES_INDEX)
        for job_id, _ in jobs:
            p.smembers(ownership.files_key(job_id))
        version, *indexed = p.execute()
    if not schema.built(version, FILES_INDEX_VERSION):
        schema.ensure(r, FILES_INDEX, FILES_INDEX_VERSION, index_old_records)
        return recorded_many(r, root, jobs)
    paths = {job_id: sorted(text(m) for m in members) for (job_id, _), members in zip(jobs, indexed, strict=True)}
    with r.pipeline(transaction=False) as p:
        for job_id, _ in jobs:
            for relative in paths[job_id]:
                p.hmget(ownership.key(relative), ["job", "sha256"])
        records = iter(p.execute())
    return {job_id: _files(root, job_id, rel, [(x, next(records)) for x in paths[job_id]]) for job_id, rel in jobs}


FILES_INDEX, FILES_INDEX_VERSION = "job-files", 1


def index_old_records(r: redis.Redis) -> None:
    """Each job's index of paths, from the ownership records written before there was one (a scan of the
    records, once: jobs/server/schema.py); kept as long as a job is (NARRATE_KEEP_DAYS)."""
    keep_s = default("keep_days") * DAY_S
    prefix = ownership.key("")
    batch: list[str] = []

    def flush() -> None:
        with r.pipeline(transaction=False) as p:
            for key in batch:
                p.hget(key, "job")
            owners = p.execute()
        with r.pipeline(transaction=False) as p:
            for key, who in zip(batch, owners, strict=True):
                if who is not None:
                    p.sadd(ownership.files_key(text(who)), key.removeprefix(prefix))
                    p.expire(ownership.files_key(text(who)), keep_s, nx=True)
            p.execute()
        batch.clear()

    for raw in r.scan_iter(match=prefix.translate(_GLOB) + "*", count=1000, _type="hash"):
        batch.append(text(raw))
        if len(batch) >= 1000:
            flush()
    if batch:
        flush()


def _files(root: Path, job_id: str, output_relative: str, records: list[tuple[str, list]]) -> list[OutputFile]:
    rel = PurePosixPath(output_relative)
    stem = rel.with_suffix("").as_posix()
    found = []
    for relative, (who, sha) in records:
        if who is None or text(who) != job_id or not relative.startswith(stem):
            continue  # another job wrote this path since
        path = _inside(root, relative)
        if path is None:
            continue
        name = PurePosixPath(relative).relative_to(rel.parent).as_posix() if rel.parent.as_posix() != "." else relative
        found.append(OutputFile(name, relative, path, path.stat().st_size, text(sha) if sha else ""))
    main = rel.as_posix()
    return sorted(found, key=lambda f: (f.relative != main, f.name))


def forget(r: redis.Redis, job_id: str) -> None:
    """Drop a deleted job's index of paths."""
    r.delete(ownership.files_key(job_id))


def _inside(root: Path, relative: str) -> Path | None:
    """The regular file at `relative` under `root`, links resolved, only if it is still under it."""
    base = Path(os.path.realpath(root))
    path = Path(os.path.realpath(base / relative))
    if not path.is_relative_to(base) or not path.is_file():
        return None
    return path
