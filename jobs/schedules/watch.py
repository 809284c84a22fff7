"""A watched folder as a schedule tick sees it: its documents, each read once, safely.

Only the folder's own entries are looked at (not sub-folders): names ending in one of
``readers.SUFFIXES`` (text, Markdown, EPUB, HTML, PDF), not hidden (a leading dot: editors' and
narrate's temporary files) and
not backups (a trailing ``~``). Each is looked at without following links, relative to a descriptor
of the folder: a symbolic link (which could lead anywhere the scheduler's user may read), anything
but a regular file, and a file with other hard links (the same file reached from outside the folder)
are refused without being opened. A document is opened with ``O_NOFOLLOW`` (a link swapped in
after the look is refused too), read no further than the document size limit, and its bytes are
what is hashed and narrated: a file replaced between hashing and submitting cannot slip in.

A file's signature (size, modification time, inode, mode) says whether it changed since a tick last
read it: an unchanged signature is not read again.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from narrate.jobs.documents.readers import SUFFIXES as DOCUMENT_SUFFIXES
from narrate.jobs.errors import NarrateError, printable
from narrate.jobs.settings import MAX_DOCUMENT_BYTES

_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class FolderUnusable(NarrateError):
    """The watched folder is missing, not a folder, or cannot be read."""


class Refused(Exception):
    """This document is skipped until it changes (the reason is for people)."""


class NotYet(Exception):
    """This document is not ready this tick (it is being written); the next tick tries again."""


def signature(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode]


@dataclass(frozen=True)
class Entry:
    name: str  # the file name (on Linux, bytes that are not UTF-8 are kept as surrogates)
    sig: list[int]
    mtime: float

    @property
    def shown(self) -> str:
        return printable(self.name)

    @property
    def stem(self) -> str:
        return self.name.rsplit(".", 1)[0]


def is_candidate(name: str) -> bool:
    return not name.startswith(".") and not name.endswith("~") and name.lower().endswith(DOCUMENT_SUFFIXES)


class Folder:
    """An open watched folder (a directory descriptor)."""

    def __init__(self, fd: int, path: str):
        self.fd = fd
        self.path = path

    def entries(self) -> tuple[list[Entry], list[tuple[Entry, str]]]:
        """(documents to consider, documents refused by what they are, with the reason), by name."""
        good: list[Entry] = []
        refused: list[tuple[Entry, str]] = []
        try:
            names = sorted(name for name in os.listdir(self.fd) if is_candidate(name))
        except OSError as e:
            raise FolderUnusable(f"watch folder {self.path} cannot be listed: {e.strerror or e}") from None
        for name in names:
            try:
                st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # gone meanwhile
            except OSError as e:
                refused.append((Entry(name, [0, 0, 0, 0], 0.0), f"cannot be looked at: {e.strerror or e}"))
                continue
            entry = Entry(name, signature(st), st.st_mtime)
            reason = refusal(st)
            if reason:
                refused.append((entry, reason))
            else:
                good.append(entry)
        return good, refused

    def read(self, entry: Entry) -> tuple[bytes, Entry]:
        """The document's bytes and the entry of the file they were read from (it may have been
        replaced since it was listed); NotYet if it changed while it was read, Refused if it cannot be."""
        try:
            fd = os.open(entry.name, _FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            raise NotYet("it was removed meanwhile") from None
        except PermissionError:
            raise Refused("it is not readable (permission denied)") from None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise Refused("it is a symbolic link (not followed)") from None
            raise Refused(f"it cannot be opened: {e.strerror or e}") from None
        try:
            with os.fdopen(fd, "rb") as f:
                before = os.fstat(f.fileno())
                reason = refusal(before)
                if reason:
                    raise Refused(reason)
                data = f.read(MAX_DOCUMENT_BYTES + 1)
                if signature(os.fstat(f.fileno())) != signature(before):
                    raise NotYet("it changed while it was read (still being written?)")
        except OSError as e:
            raise Refused(f"it cannot be read: {e.strerror or e}") from None
        return data, Entry(entry.name, signature(before), before.st_mtime)


def refusal(st: os.stat_result) -> str | None:
    """Why a file is not read at all, from what it is, or None."""
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link (not followed: it could lead out of the folder)"
    if not stat.S_ISREG(st.st_mode):
        return f"it is not a regular file: it is {_KINDS.get(stat.S_IFMT(st.st_mode), 'some other kind of file')}"
    if st.st_nlink > 1:
        return f"it has {st.st_nlink} hard links (not read: it may be a file from outside the folder)"
    if st.st_size > MAX_DOCUMENT_BYTES:
        return f"it is {st.st_size / 2**20:.1f} MiB; the limit is {MAX_DOCUMENT_BYTES // 2**20} MiB (split it)"
    return None


@contextmanager
def open_folder(path: str) -> Iterator[Folder]:
    """The watched folder, opened without following a link at its own name (it was resolved when the
    schedule was added); FolderUnusable with the reason otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FolderUnusable(f"watch folder {path} does not exist (on this host)") from None
    except PermissionError:
        raise FolderUnusable(f"watch folder {path} cannot be read (permission denied)") from None
    except OSError as e:  # a link at its name: ELOOP (macOS) or ENOTDIR (Linux, with O_DIRECTORY)
        if e.errno == errno.ELOOP or os.path.islink(path):
            raise FolderUnusable(f"watch folder {path} has been replaced by a symbolic link") from None
        if e.errno == errno.ENOTDIR:
            raise FolderUnusable(f"watch folder {path} is not a folder any more") from None
        raise FolderUnusable(f"watch folder {path} cannot be opened: {e.strerror or e}") from None
    try:
        yield Folder(fd, path)
    finally:
        os.close(fd)


def collisions(entries: list[Entry]) -> dict[str, str]:
    """Documents whose output would have the same name as an earlier one's (same stem, letter case
    ignored as macOS does): name -> the earlier document's name."""
    first: dict[str, str] = {}
    lost = {}
    for e in entries:
        k = e.stem.casefold()
        if k in first:
            lost[e.name] = first[k]
        else:
            first[k] = e.name
    return lost
