"""What a book's stitch keeps for the next stitch of the same book, a redo's (`narrate redo`, jobs/api/redo_request.py),
under NARRATE_HOME/segments: the stitch's *record* (where its units and segments start, each segment's lead, each
unit's loudness gain and each sentence's, each sentence's checkpoint body hash: ``books/JOB.json``) and, for m4a,
m4b and mp3, its encoded segments (trimmed AAC or raw MP3 frames, named by the hash of what they hold:
``KEY[:2]/KEY.aac``, ``KEY[:2]/KEY.mp3``).

A redo's stitch follows the record of the job it redoes: it cuts where that one did (jobs/audio/segments.py
``Cuts``), keeps each unit's loudness gain (a redone sentence gets the unit's gain, or less to keep its true peak
under the ceiling, as any sentence; the unit is not measured again), and takes every segment whose key it finds
from this cache instead of encoding it. A segment's key is the hash of everything its samples depend on (each
sentence's checkpoint body, gain and pause, its lead and tail, its place at the book's start or end, the encoder's
arguments), so a segment found is the segment it would encode. Only the segments holding a redone sentence are
encoded again; the stitch then muxes, tags and copies the book as any does.

Without a record on this host (the redo runs on another host, or the record was pruned) the redo stitches the
whole book as a new one. The cache shares NARRATE_CACHE_MAX_GB with the sentence cache: records are kept newest
first while the segments they name fit in a quarter of it (``prune``); 0 keeps nothing."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from narrate.jobs.audio.assemble import FADE_SAMPLES, TRUE_PEAK_CEILING_DB
from narrate.jobs.audio.segments import Cuts, Segment, Segmenter
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.spec import JobSpec

FORMAT = 1  # of records and keys: raise it when what a segment's samples depend on changes
SHARE = 4  # the segments may take 1/SHARE of NARRATE_CACHE_MAX_GB
SUFFIXES = ("aac", "mp3")  # of the segments' files
log = logging.getLogger("narrate.jobs")


def fingerprint(plan: Plan, spec: JobSpec) -> str:
    """What cuts and gains depend on besides the sentences' samples: the pauses, the loudness target, the fades."""
    pauses = [plan.pause_after_ms(i, spec) for i in range(len(plan.sentences))]
    blob = json.dumps([FORMAT, pauses, spec.loudness, FADE_SAMPLES, TRUE_PEAK_CEILING_DB])
    return hashlib.sha256(blob.encode()).hexdigest()


def segment_key(
    seg: Segment, shas: list[str], gains: list[float | None], pauses: list[int], last: bool, encoder: list[str]
) -> str:
    """The hash of everything a segment's encoded samples depend on (`shas`, `gains`, `pauses`: its sentences')."""
    blob = json.dumps(
        [
            FORMAT,
            encoder,
            seg.lead,
            seg.tail,
            seg.samples,
            seg.index == 0,
            last,
            shas,
            [repr(g) for g in gains],
            pauses[:-1],
        ]
    )
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class Record:
    """A stitch as the next one follows it."""

    fingerprint: str
    sha: list[str]  # each sentence's checkpoint body hash
    cuts: Cuts
    unit_gain: list[float | None]  # each unit's gain (None: loudness off)
    gains: list[float | None]  # each sentence's
    segments: list[str]  # the keys of its encoded segments (m4a, m4b, mp3)

    def to_json(self) -> dict:
        leads = [[k, v] for k, v in sorted(self.cuts.leads.items())]
        return {
            "format": FORMAT,
            "fingerprint": self.fingerprint,
            "sha": self.sha,
            "leads": leads,
            "unit_starts": sorted(self.cuts.unit_starts),
            "unit_gain": self.unit_gain,
            "gains": self.gains,
            "segments": self.segments,
        }

    @classmethod
    def from_json(cls, data: dict) -> Record:
        cuts = Cuts(frozenset(int(i) for i in data["unit_starts"]), {int(k): int(v) for k, v in data["leads"]})
        return cls(
            str(data["fingerprint"]),
            [str(s) for s in data["sha"]],
            cuts,
            _floats(data["unit_gain"]),
            _floats(data["gains"]),
            [str(k) for k in data["segments"]],
        )


def _floats(values: list) -> list[float | None]:
    return [None if g is None else float(g) for g in values]


def record_of(
    seg: Segmenter,
    fingerprint: str,
    shas: list[str],
    unit_gain: list[float | None],
    gains: list[float | None],
    keys: list[str],
) -> Record:
    cuts = Cuts(frozenset(u.first for u in seg.units[1:]), {s.first: s.lead for s in seg.segments[1:]})
    return Record(fingerprint, shas, cuts, unit_gain, gains, keys)


class SegmentCache:
    """NARRATE_HOME/segments: encoded segments by key, and the stitch records by job."""

    def __init__(self, root: Path, cap_bytes: int):
        self.root, self.cap = Path(root), cap_bytes // SHARE

    def path(self, key: str, suffix: str = "aac") -> Path:
        if len(key) != 64 or not all(c in "0123456789abcdef" for c in key) or suffix not in SUFFIXES:
            raise ValueError(f"not a segment key: {key!r:.80}")
        return self.root / key[:2] / f"{key}.{suffix}"

    def _record_path(self, job_id: str) -> Path:
        if not job_id or "/" in job_id or job_id.startswith("."):
            raise ValueError(f"not a job id: {job_id!r:.80}")
        return self.root / "books" / f"{job_id}.json"

    def take(self, key: str, dest: Path, suffix: str = "aac") -> bool:
        """The segment of `key` at `dest` (a link, or a copy), if the cache has it."""
        src = self.path(key, suffix)
        try:
            os.link(src, dest)
        except FileNotFoundError:
            return False
        except OSError:  # another file system, or no links there
            try:
                shutil.copyfile(src, dest)
            except FileNotFoundError:
                return False
        with contextlib.suppress(OSError):
            os.utime(src)
        return True

    def keep(self, key: str, src: Path, suffix: str = "aac") -> None:
        """Keep the encoded segment `src` under `key` (a link where it can)."""
        if self.cap <= 0:
            return
        final = self.path(key, suffix)
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=".", suffix=".tmp")
        os.close(fd)
        try:
            os.unlink(tmp)
            try:
                os.link(src, tmp)
            except OSError:
                shutil.copyfile(src, tmp)
            os.replace(tmp, final)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def record(self, job_id: str) -> Record | None:
        try:
            data = json.loads(self._record_path(job_id).read_text())
            return Record.from_json(data) if data.get("format") == FORMAT else None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def save(self, job_id: str, record: Record) -> None:
        """Keep the stitch's record, then prune the cache to its share of the cap."""
        if self.cap <= 0:
            return
        path = self._record_path(job_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(record.to_json(), f)
        os.replace(tmp, path)
        self.prune(keep=job_id)

    def prune(self, keep: str | None = None) -> None:
        """Records newest first while the segments they name fit in the cap (the one of `keep` always);
        then every segment no record kept names, and temp files writers left."""
        books = self.root / "books"
        found = sorted(books.glob("*.json"), key=_mtime, reverse=True) if books.is_dir() else []
        named: set[str] = set()
        total = 0
        for path in found:
            rec = self.record(path.stem)
            keys = set(rec.segments) - named if rec is not None else set()
            size = sum(_size(self.path(k, suffix)) for k in keys for suffix in SUFFIXES)
            if rec is not None and (path.stem == keep or total + size <= self.cap):
                named |= keys
                total += size
            else:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        for shard in self.root.iterdir() if self.root.is_dir() else ():
            if shard.name == "books" or not shard.is_dir():
                continue
            for f in shard.iterdir():
                if f.name.startswith(".") or f.stem not in named:
                    with contextlib.suppress(FileNotFoundError):
                        f.unlink()
            with contextlib.suppress(OSError):
                shard.rmdir()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@dataclass
class Reuse:
    """A job's side of the cache: the cache (None: the cap is 0), the record its stitch follows (a redo's)."""

    cache: SegmentCache | None
    follow: Record | None = None
    fingerprint: str = ""

    @classmethod
    def open(cls, home: Path, cap_bytes: int, plan: Plan, spec: JobSpec, redo_of: str | None) -> Reuse:
        cache = SegmentCache(Path(home) / "segments", cap_bytes) if cap_bytes > 0 else None
        mark = fingerprint(plan, spec)
        follow = cache.record(redo_of) if cache is not None and redo_of else None
        if follow is not None and not _fits(follow, mark, len(plan.sentences), spec.loudness is not None):
            follow = None
        if redo_of and follow is None:
            log.info("no record of job %s's stitch on this host: the whole book is stitched again", redo_of)
        return cls(cache, follow, mark)


def _fits(record: Record, mark: str, n: int, loud: bool) -> bool:
    """The record is of a stitch of these sentences and pauses, whole (a damaged one is not followed)."""
    cuts = record.cuts
    units = len(cuts.unit_starts) + 1
    if record.fingerprint != mark or len(record.sha) != n or len(record.gains) != n or len(record.unit_gain) != units:
        return False
    if not all(0 < i < n for i in (*cuts.unit_starts, *cuts.leads)) or not cuts.unit_starts <= set(cuts.leads):
        return False
    return not loud or all(g is not None for g in (*record.unit_gain, *record.gains))
