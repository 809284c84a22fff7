"""Chapters playable while the rest of the book is synthesized (m4a and m4b books, whose audio is
encoded in segments as it comes: jobs/audio/segment_encoder.py).

Once every segment holding a chapter's sentences is encoded, and the book is still being
synthesized, the chapter's raw AAC segments are joined (stream copy: ADTS frames concatenate) into
``.narrate-preview-<job id>/chapter-NNN.aac`` beside the book's output, through the output root's
confined writes (jobs/outputs/confined.py: a temp file renamed into place, no link followed), and
recorded in Redis (``narrate:preview:<job id>``: chapter number -> its path under the output root,
title and seconds) for `narrate serve` to play. A chapter whose opening pause was too short to cut
at starts with the end of the chapter before it (segments.py). The book's own files replace them:
the folder and the record go when the book is finished, when it ends for good without a book
(canceled, deleted, failed), or when the job is deleted."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from pathlib import Path, PurePosixPath

import redis
from narrate.jobs.audio.segments import Segment
from narrate.jobs.outputs.confined import OutputRoot, create_new, open_dir, rename_into_place, temp_name
from narrate.jobs.server.store import PREFIX
from narrate.jobs.settings import DAY_S, SAMPLE_RATE

log = logging.getLogger("narrate.jobs")
KEEP_S = 7 * DAY_S  # a stopped book's previews stay playable this long (a resume renews them)


def preview_key(job_id: str) -> str:
    return f"{PREFIX}preview:{job_id}"


def folder_of(output_relative: str, job_id: str) -> PurePosixPath:
    """The previews' folder under the output root: beside the book's output, hidden."""
    return PurePosixPath(output_relative).parent / f".narrate-preview-{job_id}"


class ChapterPreviews:
    """Made from the segment encoder's threads (``update`` after each segment), one chapter once."""

    def __init__(
        self,
        r: redis.Redis,
        job_id: str,
        root: OutputRoot,
        output_relative: str,
        chapters: list[tuple[int, int, str]],
        scratch: Path,
    ):
        self.r, self.job_id, self.root, self.scratch = r, job_id, root, scratch
        self.parts = [p for p in folder_of(output_relative, job_id).parts if p != "."]
        self.chapters = chapters  # (first sentence, end sentence, title)
        self.made: set[int] = set()
        self.closed = False
        self._lock = threading.Lock()

    def close(self) -> None:
        """No chapter is made after this (the book is done, or ended for good)."""
        with self._lock:
            self.closed = True

    def update(self, segments: list[Segment], encoded: dict[int, str]) -> None:
        """Make each chapter whose segments are all encoded now (errors are logged: a preview is a
        convenience, never the book's failure)."""
        with self._lock:
            for k, (first, end, title) in enumerate(self.chapters):
                if self.closed:
                    return
                if k in self.made:
                    continue
                covering = [s for s in segments if s.last >= first and s.first < end]
                if not covering or covering[0].first > first or covering[-1].last < end - 1:
                    continue  # its last segment is not cut yet
                if any(s.index not in encoded for s in covering):
                    continue
                try:
                    self._write(k + 1, title, [encoded[s.index] for s in covering], sum(s.samples for s in covering))
                except (OSError, redis.RedisError, ValueError) as e:
                    log.warning(
                        "job %s: chapter %d cannot be played before the book is done: %s", self.job_id, k + 1, e
                    )
                self.made.add(k)

    def _write(self, number: int, title: str, names: list[str], samples: int) -> None:
        name = f"chapter-{number:03d}.aac"
        fd = open_dir(self.root, self.parts, create=True)
        tmp = temp_name()
        try:
            with os.fdopen(create_new(fd, tmp), "wb") as out:
                for seg in names:
                    with open(self.scratch / seg, "rb") as f:
                        while block := f.read(1 << 20):
                            out.write(block)
            rename_into_place(fd, tmp, name, self.root, self.parts)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
        finally:
            os.close(fd)
        record = {"path": "/".join([*self.parts, name]), "title": title, "seconds": round(samples / SAMPLE_RATE, 3)}
        with self.r.pipeline() as p:
            p.hset(preview_key(self.job_id), str(number), json.dumps(record))
            p.expire(preview_key(self.job_id), KEEP_S)
            p.execute()


def recorded(r: redis.Redis, job_id: str) -> dict[int, dict]:
    """Chapter number -> {path, title, seconds} of the previews made so far."""
    raw = r.hgetall(preview_key(job_id))
    out = {}
    for k, v in raw.items():
        with contextlib.suppress(ValueError, TypeError):
            out[int(k)] = json.loads(v)
    return out


def remove(r: redis.Redis, root: Path, job_id: str, output_relative: str) -> None:
    """The job's previews gone: the record, each file it lists, and the folder once empty."""
    real_root = Path(os.path.realpath(root))
    folder = real_root / folder_of(output_relative, job_id)
    if Path(os.path.realpath(folder)) != folder:  # a link on the way: nothing outside the root is touched
        r.delete(preview_key(job_id))
        return
    for record in recorded(r, job_id).values():
        path = real_root / PurePosixPath(str(record.get("path", "")))
        if path.parent == folder and path.name.startswith("chapter-") and not path.is_symlink():
            path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()
    r.delete(preview_key(job_id))
