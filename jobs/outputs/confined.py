"""Directories under the output root, reached without following links.

The worker pins the output root when a job starts (its real path and inode). Whenever it writes
it walks down from the root with directory descriptors opened O_NOFOLLOW|O_DIRECTORY (creating
missing directories relative to their parent's descriptor), creates its temp file relative to
the descriptor it reached (O_CREAT|O_EXCL|O_NOFOLLOW), and right before the rename walks again
and checks that it reaches the same directory. A directory of the path, or the root or one of its
parents, swapped for a symlink or moved while the job runs fails the job: the book never lands
outside the root. The rename replaces the target's directory entry (a link, a hard link, a FIFO):
an existing target is never opened.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from narrate.jobs.errors import BadInput

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# Temp files in an output directory: a fixed short prefix and a random token, never the final name.
TEMP_PREFIX = ".narrate-"
TEMP_SUFFIX = ".partial.tmp"
TEMP_NAME_BYTES = len(TEMP_PREFIX) + 16 + len(TEMP_SUFFIX)
_NOT_A_DIR = (errno.ELOOP, errno.EMLINK, errno.ENOTDIR)  # what O_NOFOLLOW|O_DIRECTORY gives a link
# Linux and macOS have all of these (openat, mkdirat, fstatat, renameat, unlinkat).
_MISSING = {os.open, os.mkdir, os.stat, os.rename, os.unlink} - os.supports_dir_fd
if _MISSING:  # pragma: no cover
    raise ImportError(f"narrate needs *at() system calls this platform lacks: {sorted(f.__name__ for f in _MISSING)}")


@dataclass(frozen=True)
class OutputRoot:
    """The output root as it was when pinned: later walks must reach this very directory."""

    path: Path  # real path, no symlinks
    dev: int
    ino: int

    @classmethod
    def pin(cls, root: str | os.PathLike) -> OutputRoot:
        """Resolve the configured root (its own symlinks are the operator's and are followed),
        create it if missing, and remember which directory it is."""
        real = Path(os.path.realpath(os.path.expanduser(root)))
        try:
            real.mkdir(parents=True, exist_ok=True)
            st = os.stat(real)
        except OSError as e:
            raise BadInput(f"output root {root} cannot be used: {e.strerror}; check NARRATE_OUTPUT_DIR") from None
        if not stat.S_ISDIR(st.st_mode):
            raise BadInput(f"output root {root} is not a directory; check NARRATE_OUTPUT_DIR")
        return cls(real, st.st_dev, st.st_ino)


def open_dir(root: OutputRoot, parts: Sequence[str], create: bool) -> int:
    """A descriptor of root/parts, reached without following any link below the root."""
    fd = _open_root(root)
    try:
        for i, name in enumerate(parts):
            if name in ("", ".", "..") or "/" in name:
                raise BadInput(f"output path {'/'.join(parts)!r} must be a plain path under the output root")
            nxt = _open_child(fd, name, create, root, parts[: i + 1])
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_root(root: OutputRoot) -> int:
    try:
        fd = os.open(root.path, DIR_FLAGS)
    except OSError as e:
        raise _root_moved(root, e.strerror) from None
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (root.dev, root.ino):
        os.close(fd)
        raise _root_moved(root, "it is another directory now")
    return fd


def _root_moved(root: OutputRoot, why: str | None) -> BadInput:
    return BadInput(
        f"the output root {root.path} is no longer the directory it was when the job started ({why}; it or a "
        "directory above it was moved or replaced by a link); nothing was written: check it and resume the job"
    )


def _open_child(fd: int, name: str, create: bool, root: OutputRoot, shown: Sequence[str]) -> int:
    for _ in range(2):
        try:
            return os.open(name, DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise BadInput(
                    f"output directory {'/'.join(shown)} under the output root {root.path} was moved or replaced "
                    "while the book was written; nothing was written: check it and resume the job"
                ) from None
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
        except OSError as e:
            if e.errno not in _NOT_A_DIR:
                raise
            try:
                is_link = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
            except OSError:
                is_link = False
            what = "is a symlink" if is_link else "is not a directory"
            raise BadInput(
                f"output path {'/'.join(shown)} under the output root {root.path} {what}: narrate does not follow "
                "links below the output root, nothing was written; make it a directory or submit the real path"
            ) from None
    raise BadInput(f"output directory {'/'.join(shown)} under {root.path} keeps changing; nothing was written")


def temp_name() -> str:
    return f"{TEMP_PREFIX}{secrets.token_hex(8)}{TEMP_SUFFIX}"


def create_new(fd: int, name: str) -> int:
    """Create `name` in the directory `fd` for writing; FileExistsError if anything has that name."""
    return os.open(name, TEMP_FLAGS, 0o666, dir_fd=fd)


def same_dir(a: int, b: int) -> bool:
    sa, sb = os.fstat(a), os.fstat(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def rename_into_place(fd: int, tmp: str, name: str, root: OutputRoot, parts: Sequence[str]) -> None:
    """Check that root/parts is still the directory `fd`, then rename tmp -> name inside it."""
    again = open_dir(root, parts, create=False)
    try:
        if not same_dir(fd, again):
            raise BadInput(
                f"output directory {'/'.join(parts) or '.'} under the output root {root.path} was moved or replaced "
                "while the book was written; nothing was written: check it and resume the job"
            )
    finally:
        os.close(again)
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            shown = "/".join([*parts, name])
            raise BadInput(f"output {shown} under {root.path} is a directory; remove it or choose another name")
    os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    with contextlib.suppress(OSError):  # make the rename durable (not every filesystem allows it)
        os.fsync(fd)
