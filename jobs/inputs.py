"""Reading a user's input file: exists, is a regular file, within its size limit, readable.

A FIFO, a device (/dev/zero, a terminal), a directory or a socket is refused before it is
opened (opening some devices has effects of its own); the file is then opened without blocking
(a FIFO swapped in meanwhile cannot hang the open), checked again on the open descriptor, and
read no further than its limit (a file that grows, or lies about its size, cannot make the read
unbounded)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from narrate.jobs.errors import BadInput

_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def read_input(path: Path, label: str, max_bytes: int, hint: str = "") -> bytes:
    """The file's bytes, or BadInput naming `label` (e.g. "document /x.txt") and the problem."""
    path = Path(path)
    try:
        _check(os.stat(path), label, max_bytes, hint)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        broken = os.path.islink(path)
        raise BadInput(f"{label} does not exist" + (" (it is a broken symbolic link)" if broken else "")) from None
    except PermissionError:
        raise BadInput(f"{label} is not readable (permission denied)") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise BadInput(f"{label} is a symbolic link loop") from None
        raise BadInput(f"{label} could not be opened: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "rb") as f:
            _check(os.fstat(f.fileno()), label, max_bytes, hint)  # the file that was opened
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise BadInput(f"{label} could not be read: {e.strerror or e}") from None
    if len(data) > max_bytes:
        raise BadInput(f"{label} is larger than {max_bytes // 2**20} MiB, the limit{hint}")
    return data


def _check(st: os.stat_result, label: str, max_bytes: int, hint: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "some other kind of file")
        raise BadInput(f"{label} is not a regular file: it is {kind}; save the content to a file first")
    if st.st_size > max_bytes:
        raise BadInput(f"{label} is {st.st_size / 2**20:.1f} MiB; the limit is {max_bytes // 2**20} MiB{hint}")
