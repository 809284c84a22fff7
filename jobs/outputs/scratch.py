"""Private scratch directories for stitching (the intermediate WAV, the encoded file, chapter
metadata), under NARRATE_HOME or the system temp dir: nothing but the final rename's temp file
ever touches the user's output directory.

Each writer holds a kernel lock (flock, released even by SIGKILL) on a file in its scratch
directory for its whole life. A writer that starts removes the scratch directories whose lock
is free, i.e. whose writer died, together with the temp file that writer had begun in an output
directory (recorded in its scratch directory before it was created).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from narrate.jobs.errors import BadInput
from narrate.jobs.outputs import confined

PREFIX = "narrate-stitch-"
STAGING = ".narrate-new-stitch-"  # made and locked under this name, then renamed: a PREFIX dir is always locked
STAGING_GRACE_S = 60  # a staging directory older than this lost its writer before the rename
LOCK = "lock"
INTENT = "output-temp.json"


class Scratch:
    def __init__(self, parent: Path | None = None):
        self.parent = Path(parent) if parent is not None else Path(tempfile.gettempdir())
        self.path: Path | None = None
        self._lock: int | None = None

    def open(self) -> Path:
        self.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        sweep(self.parent)
        staging = Path(tempfile.mkdtemp(prefix=STAGING, dir=self.parent))
        self._lock = os.open(staging / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self.path = self.parent / (PREFIX + staging.name[len(STAGING) :])
        os.rename(staging, self.path)
        return self.path

    def record(self, root: confined.OutputRoot, parts: list[str], name: str) -> None:
        """Note the temp file about to be made in an output directory, for a sweeper if we die."""
        assert self.path is not None
        data = {"root": str(root.path), "dev": root.dev, "ino": root.ino, "parts": parts, "name": name}
        (self.path / INTENT).write_text(json.dumps(data))

    def close(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)  # still locked: no sweeper interferes
            self.path = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def sweep(parent: Path) -> None:
    """Remove the scratch directories (and output temp files) of dead writers."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith((PREFIX, STAGING)):
            continue
        with contextlib.suppress(OSError):
            st = entry.stat(follow_symlinks=False)
            if entry.name.startswith(STAGING) and time.time() - st.st_mtime < STAGING_GRACE_S:
                continue  # being made right now: its lock may not be taken yet
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
                _sweep_one(Path(entry.path))


def _sweep_one(path: Path) -> None:
    try:
        lock = os.open(path / LOCK, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            path.rmdir()  # a writer died before it made its lock: the directory is empty
        return
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # its writer is alive
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, BadInput):
            _remove_output_temp(json.loads((path / INTENT).read_text()))
        shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(lock)


def _remove_output_temp(intent: dict) -> None:
    name = str(intent["name"])
    if not (name.startswith(confined.TEMP_PREFIX) and name.endswith(confined.TEMP_SUFFIX) and "/" not in name):
        return
    root = confined.OutputRoot(Path(intent["root"]), int(intent["dev"]), int(intent["ino"]))
    fd = confined.open_dir(root, [str(p) for p in intent["parts"]], create=False)
    try:
        os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)
