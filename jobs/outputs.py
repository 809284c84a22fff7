"""Output files: formats, and paths confined to the output root.

Jobs carry the output path *relative* to the output root (NARRATE_OUTPUT_DIR), never a
client's absolute path; each worker joins it with its own root and checks it again.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from .errors import BadInput

# extension -> (ffmpeg muxer, codec arguments)
FORMATS: dict[str, tuple[str, list[str]]] = {
    ".wav": ("wav", ["-c:a", "pcm_s16le"]),
    ".flac": ("flac", ["-c:a", "flac"]),
    ".mp3": ("mp3", ["-c:a", "libmp3lame", "-b:a", "96k"]),
    ".m4a": ("ipod", ["-c:a", "aac", "-b:a", "96k"]),
    ".m4b": ("ipod", ["-c:a", "aac", "-b:a", "96k", "-brand", "M4B "]),
    ".ogg": ("ogg", ["-c:a", "libopus", "-b:a", "48k"]),
    ".opus": ("ogg", ["-c:a", "libopus", "-b:a", "48k"]),
}


def check_format(path: str | Path) -> str:
    ext = Path(path).suffix.lower()
    if ext not in FORMATS:
        known = ", ".join(sorted(FORMATS))
        raise BadInput(f"output {path}: unknown format {ext or '(no extension)'}; use one of {known}")
    return ext


def relative_output(root: Path, requested: str | Path) -> str:
    """Client side: the output path relative to the root, after checking it is inside and writable."""
    check_format(requested)
    root = Path(root).expanduser().resolve()
    target = Path(os.path.abspath(Path(requested).expanduser()))
    # Resolve symlinks in the existing part of the path, so a link cannot lead out of the root.
    real = _resolve_existing(target)
    if not real.is_relative_to(root):
        raise BadInput(
            f"output {requested} is outside the output root {root}; choose a path under it or set NARRATE_OUTPUT_DIR"
        )
    check_writable(real)
    rel = real.relative_to(root).as_posix()
    try:
        rel.encode("utf-8")  # jobs are JSON text: a Linux file name's stray bytes could not be stored
    except UnicodeEncodeError:
        raise BadInput(
            f"output {requested} has bytes in its name that are not UTF-8; choose another name (-o)"
        ) from None
    return rel


def output_path(root: Path, rel: str) -> Path:
    """Worker side: join the relative path with this host's root, refusing anything that escapes it."""
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise BadInput(f"output path {rel!r} must be relative to the output root, without '..'")
    root = Path(root).expanduser().resolve()
    real = _resolve_existing(root.joinpath(*pure.parts))
    if not real.is_relative_to(root):
        raise BadInput(f"output path {rel!r} leads outside the output root {root} (through a symlink)")
    check_format(real)
    return real


def check_writable(path: Path) -> None:
    """The file's directory exists and is writable, or can be created."""
    if path.is_dir():
        raise BadInput(f"output {path} is a directory; give a file name such as {path / 'book.mp3'}")
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise BadInput(f"output {path} cannot be written: {parent} is not a writable directory")
    if path.exists() and not os.access(path, os.W_OK):
        raise BadInput(f"output {path} exists and is not writable")


def _resolve_existing(path: Path) -> Path:
    """Resolve symlinks in the longest existing prefix of `path`, keep the rest as written."""
    tail: list[str] = []
    head = path
    while not head.exists() and head != head.parent:
        tail.append(head.name)
        head = head.parent
    resolved = head.resolve()
    for name in reversed(tail):
        resolved = resolved / name
    return resolved
