"""The sentence cache: finished sentences' checkpoints (jobs.book.checkpoints) are kept after a job,
content-addressed, so a resubmitted or edited book synthesizes only what changed. Its size is capped
(``NARRATE_CACHE_MAX_GB``); the least recently used are evicted first. "Used" is the file's
modification time, which the checkpoint store sets on every hit (``CheckpointStore.touch``): access
times are unreliable on noatime/relatime mounts.

Eviction runs when a job has put its output in place and never removes that job's own sentences.
It can still remove what another running job on the host (or ``narrate cache prune``) counts on;
such a job synthesizes a vanished checkpoint again when it stitches (jobs.task.job)."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from narrate.jobs.book.checkpoints import CheckpointStore
from narrate.jobs.errors import BadInput

GB = 10**9
_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": GB,
    "gb": GB,
    "t": 10**12,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


@dataclass(frozen=True)
class Entry:
    path: Path
    size: int
    used: float  # last use: the file's modification time (epoch seconds)


@dataclass(frozen=True)
class CacheInfo:
    path: str
    count: int
    bytes: int
    cap_bytes: int
    oldest_use: float | None
    newest_use: float | None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Pruned:
    count: int
    bytes: int
    left_count: int
    left_bytes: int

    def to_json(self) -> dict:
        return asdict(self)


def cap_bytes(max_gb: float) -> int:
    return int(round(max_gb * GB))


def parse_size(raw: str) -> int:
    """Bytes from `500MB`, `1.5G`, `2GiB`, `0` or a plain number of bytes (decimal units, as the cap)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*", raw)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS:
        raise BadInput(f"size {raw!r} is not a size: write e.g. 500MB, 2GB or 1.5GiB")
    return int(float(m.group(1)) * _UNITS[unit])


def entries(root: Path) -> list[Entry]:
    """Every checkpoint in the cache (temp files of writers are not), oldest use first."""
    found: list[Entry] = []
    if not root.is_dir():
        return found
    for shard in os.scandir(root):
        if not shard.is_dir(follow_symlinks=False):
            continue
        with contextlib.suppress(FileNotFoundError):
            for f in os.scandir(shard.path):
                if not f.name.endswith(".seg") or f.name.startswith("."):
                    continue
                with contextlib.suppress(FileNotFoundError):  # evicted meanwhile
                    st = f.stat(follow_symlinks=False)
                    found.append(Entry(Path(f.path), st.st_size, st.st_mtime))
    found.sort(key=lambda e: (e.used, e.path.name))
    return found


def info(root: Path, cap: int) -> CacheInfo:
    items = entries(root)
    return CacheInfo(
        path=str(root),
        count=len(items),
        bytes=sum(e.size for e in items),
        cap_bytes=cap,
        oldest_use=items[0].used if items else None,
        newest_use=items[-1].used if items else None,
    )


def _remove(entry: Entry) -> bool:
    """Remove a checkpoint unless it was used since it was listed (a job touched it meanwhile)."""
    try:
        if os.stat(entry.path, follow_symlinks=False).st_mtime != entry.used:
            return False
        os.unlink(entry.path)
    except FileNotFoundError:  # another evictor was first
        return False
    return True


def prune(
    root: Path, to_bytes: int | None = None, older_than_s: float | None = None, keep: Iterable[str] = ()
) -> Pruned:
    """Remove checkpoints last used more than `older_than_s` ago, then the least recently used until
    the rest is at most `to_bytes` (0: all). `keep`: checkpoint keys never removed."""
    kept = set(keep)
    items = entries(root)
    total = sum(e.size for e in items)
    cutoff = time.time() - older_than_s if older_than_s is not None else None
    count = freed = 0
    for e in items:  # oldest use first
        old = cutoff is not None and e.used < cutoff
        over = to_bytes is not None and total - freed > to_bytes
        if not (old or over):  # both only get rarer along the list
            break
        if e.path.stem in kept:
            continue
        if _remove(e):
            count += 1
            freed += e.size
    return Pruned(count, freed, len(items) - count, total - freed)


def after_job(store: CheckpointStore, keys: list[str], cap: int) -> Pruned:
    """What a job does with the cache once its output is in place: cap 0 removes its own checkpoints
    (nothing is cached); otherwise the least recently used of the others go until the cache fits."""
    if cap <= 0:
        store.discard(keys)
        return Pruned(len(set(keys)), 0, 0, 0)
    return prune(store.root, to_bytes=cap, keep=keys)
