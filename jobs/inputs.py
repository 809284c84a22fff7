"""Reading a user's input file: exists, is a regular file, within its size limit, readable."""

from __future__ import annotations

from pathlib import Path

from .errors import BadInput


def read_input(path: Path, label: str, max_bytes: int, hint: str = "") -> bytes:
    """The file's bytes, or BadInput naming `label` (e.g. "document /x.txt") and the problem."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"{label} does not exist")
    if not path.is_file():
        raise BadInput(f"{label} is not a regular file")
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise BadInput(f"{label} is {size / 2**20:.1f} MiB; the limit is {max_bytes // 2**20} MiB{hint}")
        return path.read_bytes()
    except PermissionError:
        raise BadInput(f"{label} is not readable (permission denied)") from None
    except OSError as e:
        raise BadInput(f"{label} could not be read: {e.strerror or e}") from None
