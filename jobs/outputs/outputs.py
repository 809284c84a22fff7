"""Output files: formats, and paths confined to the output root.

Jobs carry the output path *relative* to the output root (NARRATE_OUTPUT_DIR), never a
client's absolute path; each worker joins it with its own root and checks it again, at job start
here and when it writes (jobs/outputs/confined.py).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path, PurePosixPath

from narrate.jobs.errors import BadInput
from narrate.jobs.outputs.confined import TEMP_NAME_BYTES, OutputRoot

__all__ = [
    "EPUB",
    "FORMATS",
    "OUTPUTS",
    "OutputRoot",
    "audio_of",
    "check_format",
    "check_lengths",
    "output_path",
    "relative_output",
]

# extension -> (ffmpeg muxer, codec arguments). AAC: ffmpeg's encoder is single-threaded; its fast
# coder encodes twice as fast as the default two-loop search (a 10-hour book: minutes saved) at a
# quality speech does not miss at 96 kbit/s mono.
AAC = ["-c:a", "aac", "-aac_coder", "fast", "-b:a", "96k"]
FORMATS: dict[str, tuple[str, list[str]]] = {
    ".wav": ("wav", ["-c:a", "pcm_s16le"]),
    ".flac": ("flac", ["-c:a", "flac"]),
    ".mp3": ("mp3", ["-c:a", "libmp3lame", "-b:a", "96k"]),
    ".m4a": ("ipod", AAC),
    ".m4b": ("ipod", [*AAC, "-brand", "M4B "]),
    ".ogg": ("ogg", ["-c:a", "libopus", "-b:a", "48k"]),
    ".opus": ("ogg", ["-c:a", "libopus", "-b:a", "48k"]),
}
# A book delivered as its read-along EPUB (`--format epub`, jobs/readalong): the EPUB 3 with media overlays is
# the output, its audio (AAC, as an .m4a is encoded) inside it and nowhere else.
EPUB = ".epub"
OUTPUTS = (*FORMATS, EPUB)  # what an output's extension may be


def audio_of(path: Path) -> Path:
    """The audio file of an output: the output itself, or for an EPUB the .m4a its package holds (made in
    scratch, never placed beside it)."""
    return path.with_suffix(".m4a") if path.suffix.lower() == EPUB else path


def check_format(path: str | Path) -> str:
    ext = Path(path).suffix.lower()
    if ext not in OUTPUTS:
        known = ", ".join(sorted(OUTPUTS))
        raise BadInput(f"output {path}: unknown format {ext or '(no extension)'}; use one of {known}")
    return ext


def relative_output(root: Path, requested: str | Path) -> str:
    """Client side: the output path relative to the root, after checking it is inside and writable.
    The rule: a relative path is taken from the output root (never from the current directory),
    an absolute one (or ~/...) must lie under it. Symlinks in the existing part of the path are
    resolved here, so the job carries the real path: the worker never follows a link below its root."""
    check_format(requested)
    root = Path(root).expanduser().resolve()
    target = Path(os.path.abspath(root / Path(requested).expanduser()))
    check_lengths(target)  # before touching the filesystem with it
    # Resolve symlinks in the existing part of the path, so a link cannot lead out of the root.
    real = _resolve_existing(target)
    if not real.is_relative_to(root) or real == root:
        shown = requested if str(requested) == str(target) else f"{requested} ({target})"
        raise BadInput(
            f"output {shown} is outside the output root {root} (NARRATE_OUTPUT_DIR): outputs go under it, "
            f"a relative -o is taken from the output root (-o book.mp3 writes {root / 'book.mp3'}); "
            "give a path under it, or set NARRATE_OUTPUT_DIR (on the workers too)"
        )
    check_lengths(real)
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
    """Worker side: join the relative path with this host's root, refusing anything that escapes it
    or passes through a symlink (checked again when the book is written: jobs/outputs/confined.py)."""
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise BadInput(f"output path {rel!r} must be relative to the output root, without '..'")
    root = Path(root).expanduser().resolve()
    final = root.joinpath(*pure.parts)
    check_format(final)
    check_lengths(final)
    here = root
    for i, name in enumerate(pure.parts):
        here = here / name
        try:
            mode = here.lstat().st_mode
        except FileNotFoundError:
            break
        last = i == len(pure.parts) - 1
        if stat.S_ISLNK(mode) and not last:  # the final name may be a link: the rename replaces it
            raise BadInput(
                f"output path {rel!r} leads through a symlink ({here.relative_to(root)}) under the output root "
                f"{root}; the worker never follows links below the root: submit the real path"
            )
        if not last and not stat.S_ISDIR(mode):
            raise BadInput(f"output path {rel!r}: {here.relative_to(root)} under {root} is not a directory")
        if last and stat.S_ISDIR(mode):
            raise BadInput(f"output {final} is a directory; remove it or choose another name")
    return final


def check_lengths(path: Path) -> None:
    """Every component, and the temp file made beside the output, fits NAME_MAX; the whole path
    fits PATH_MAX (both as the filesystem of the nearest existing directory says)."""
    existing = path.parent
    while not os.path.isdir(existing) and existing != existing.parent:
        existing = existing.parent
    name_max = _pathconf(existing, "PC_NAME_MAX", 255)
    path_max = _pathconf(existing, "PC_PATH_MAX", 1024 if sys.platform == "darwin" else 4096)
    for name in path.parts[1:]:
        if len(os.fsencode(name)) > name_max:
            raise BadInput(
                f"output {path}: the name is too long: {name[:40]}... has {len(os.fsencode(name))} bytes, "
                f"the filesystem allows {name_max}; choose a shorter name"
            )
    if TEMP_NAME_BYTES > name_max:
        raise BadInput(f"output {path}: the filesystem allows names of only {name_max} bytes; choose another")
    if len(os.fsencode(str(path))) >= path_max:
        raise BadInput(
            f"output {str(path)[:60]}...: the path is too long ({len(os.fsencode(str(path)))} bytes, the limit is "
            f"{path_max - 1}); choose a shorter path"
        )


def _pathconf(path: Path, name: str, default: int) -> int:
    try:
        value = os.pathconf(path, name)
    except (OSError, ValueError):
        return default
    return value if value > 0 else default


def check_writable(path: Path) -> None:
    """The file's directory exists and is writable, or can be created; an existing target is a
    regular file (the worker replaces it; a directory, FIFO, socket or device is refused)."""
    if path.is_dir():
        raise BadInput(f"output {path} is a directory; give a file name such as {path / 'book.mp3'}")
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise BadInput(f"output {path} cannot be written: {parent} is not a writable directory")
    if path.exists() and not path.is_file():
        raise BadInput(f"output {path} exists and is not a regular file; choose another name")
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
