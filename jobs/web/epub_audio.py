"""The audio inside a narration's EPUB (`--format epub`: the book is one EPUB, its audio in the
package), for the pages' player: copied out once into a small cache under the home
(``web-cache/epub-audio``, named by the EPUB's path, size and modification time, so a changed book is
copied again; the few most recent kept) and served from there with HTTP Range like any file. The
EPUB stores its audio uncompressed, so the copy is a plain read."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import zipfile
from pathlib import Path

from narrate.jobs.web.outputs import AUDIO

KEEP = 4  # copies kept (the books last played)


def epub_audio(epub: Path, home: Path) -> Path | None:
    """The audio of `epub` as a file of its own (None: the EPUB holds none, or cannot be read)."""
    try:
        stat = epub.stat()
        with zipfile.ZipFile(epub) as z:
            inside = [i for i in z.infolist() if Path(i.filename).suffix.lower() in AUDIO]
            if not inside:
                return None
            member = max(inside, key=lambda i: i.file_size)
            key = hashlib.sha256(f"{epub.resolve()}\n{stat.st_size}\n{stat.st_mtime_ns}".encode()).hexdigest()[:24]
            folder = home / "web-cache" / "epub-audio"
            copy = folder / f"{key}{Path(member.filename).suffix.lower()}"
            if copy.exists():
                os.utime(copy)  # recently played: kept
                return copy
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".part-", delete=False) as out, z.open(member) as src:
                try:
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
                except BaseException:
                    Path(out.name).unlink(missing_ok=True)
                    raise
            os.replace(out.name, copy)  # whole or not at all: a player never reads half a copy
    except (OSError, zipfile.BadZipFile, ValueError):
        return None
    _trim(folder)
    return copy


def _trim(folder: Path) -> None:
    copies = sorted((p for p in folder.iterdir() if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime)
    for old in copies[:-KEEP]:
        with contextlib.suppress(OSError):
            old.unlink()
