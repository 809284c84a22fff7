"""Who writes each output: one pending job per output path, narrate never replaces a file it did
not write (unless the job says ``overwrite``), and "already done" only for output whose content is
the job's own.

Kept in Redis per output path (relative to the output root, so every host agrees):
``narrate:output:<path>`` = {``pending``: the job that will write it, ``job``: the job that wrote it
last, ``sha256``: the content it wrote}; and per job the set of paths it wrote,
``narrate:job-files:<job>`` (an index: whether another job wrote a path since, its record says). A
claim is atomic (WATCH/MULTI): two submits racing for one path cannot both get it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import redis
from narrate.jobs.errors import BadInput
from narrate.jobs.server.records import find
from narrate.jobs.server.store import PREFIX
from rq.job import JobStatus

PENDING_STATES = (JobStatus.QUEUED, JobStatus.STARTED, JobStatus.DEFERRED, JobStatus.SCHEDULED)
CHUNK = 1 << 20


def key(rel: str) -> str:
    return f"{PREFIX}output:{rel}"


def files_key(job_id: str) -> str:
    """The index of the paths a job wrote (a set, jobs/outputs/recorded.py): its files found without a
    scan of the keyspace."""
    return f"{PREFIX}job-files:{job_id}"


def folded_key(rel: str) -> str:
    """The path with its case folded: macOS's and Windows' file systems take BOOK.mp3 and book.mp3
    for one file, so one pending job may hold either ({pending job, its path as given})."""
    return f"{PREFIX}output-folded:{rel.casefold()}"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class Record:
    pending: str | None
    job: str | None  # wrote it last
    sha256: str | None  # of what it wrote


def record(r: redis.Redis, rel: str) -> Record:
    fields = cast("dict[bytes, bytes]", r.hgetall(key(rel)))  # narrate's clients return bytes (decode_responses off)
    raw = {k.decode(): v.decode() for k, v in fields.items()}
    return Record(raw.get("pending"), raw.get("job"), raw.get("sha256"))


def _pending(r: redis.Redis, job_id: str | None) -> bool:
    if not job_id:
        return False
    job = find(r, job_id)  # gone or unreadable: not pending
    return job is not None and job.get_status(refresh=False) in PENDING_STATES


def written_by_narrate(path: Path, rec: Record) -> bool:
    """The file at `path` is exactly what narrate last wrote there."""
    return rec.sha256 is not None and sha256_file(path) == rec.sha256


def claim(r: redis.Redis, rel: str, job_id: str, final: Path, overwrite: bool, keep_s: int = 30 * 86400) -> str | None:
    """Client side, before enqueueing `job_id` to write `rel` (seen locally at `final`): refuse if
    another pending job will write it, or if a file is there that narrate did not write and
    `overwrite` is off. Returns a note for the user ("replaces ... written by job X") or None."""
    k, folded = key(rel), folded_key(rel)
    with r.pipeline() as p:
        while True:
            try:
                p.watch(k, folded)
                note = check(r, rel, job_id, final, overwrite)
                p.multi()
                p.hset(k, "pending", job_id)
                p.hset(folded, mapping={"pending": job_id, "path": rel})
                p.expire(folded, keep_s)  # kept as long as the job's record at most
                p.execute()
                return note
            except redis.WatchError:
                continue


def _other_pending(r: redis.Redis, rec: Record, job_id: str) -> str | None:
    """Another job that is still pending and will write this output, if any."""
    return rec.pending if rec.pending not in (None, job_id) and _pending(r, rec.pending) else None


def check(r: redis.Redis, rel: str, job_id: str, final: Path, overwrite: bool) -> str | None:
    """The rules of `claim`, without claiming (a batch checks every output before it submits any)."""
    rec = record(r, rel)
    if _other_pending(r, rec, job_id):
        raise BadInput(
            f"output {final} is already the target of pending job {rec.pending}; choose another "
            f"output (-o), or wait for that job (narrate status {rec.pending})"
        )
    _refuse_case_twin(r, rel, job_id, final)
    return _existing(final, rec, job_id, overwrite)


def _refuse_case_twin(r: redis.Redis, rel: str, job_id: str, final: Path) -> None:
    """Another pending job writes the same path but for its case: one file on macOS and Windows."""
    raw = {k.decode(): v.decode() for k, v in cast("dict[bytes, bytes]", r.hgetall(folded_key(rel))).items()}
    other, path = raw.get("pending"), raw.get("path", "")
    if other and other != job_id and path != rel and _pending(r, other):
        raise BadInput(
            f"output {final} differs only in case from {path}, the target of pending job {other}: one file on "
            "macOS and Windows file systems; choose another name, or wait for that job"
        )


def _existing(final: Path, rec: Record, job_id: str, overwrite: bool) -> str | None:
    if not os.path.lexists(final):
        return None
    if overwrite:
        return f"replaces {final} (--overwrite)"
    if os.path.isfile(final) and not os.path.islink(final) and written_by_narrate(final, rec):
        if rec.job == job_id:
            return None
        return f"replaces {final.name} written by job {rec.job}"
    raise BadInput(
        f"output {final} exists and was not written by narrate (or was changed since); "
        "choose another output (-o), or pass --overwrite to replace it"
    )


def check_before_write(r: redis.Redis, rel: str, job_id: str, final: Path, overwrite: bool) -> None:
    """Worker side, right before the output is put in place: the same rules, against what is on
    this host's disk now (a file may have appeared since the submit)."""
    rec = record(r, rel)
    if other := _other_pending(r, rec, job_id):
        raise BadInput(f"output {final} was claimed by job {other} since this job was submitted")
    _existing(final, rec, job_id, overwrite)


def record_written(r: redis.Redis, rel: str, job_id: str, sha256: str, keep_s: int) -> None:
    """`job_id` wrote `rel` (its content's `sha256`): the record, and the job's index of paths, kept as
    long as the job (`keep_s`)."""
    k = key(rel)
    with r.pipeline() as p:
        p.hset(k, mapping={"job": job_id, "sha256": sha256})
        p.sadd(files_key(job_id), rel)
        p.expire(files_key(job_id), keep_s)
        p.hdel(k, "pending")
        p.delete(folded_key(rel))
        p.execute()


def replaced_by(r: redis.Redis, rel: str, job_id: str) -> str | None:
    """The job that wrote this job's output path after it, if any."""
    rec = record(r, rel)
    return rec.job if rec.job not in (None, job_id) else None
