"""An episode's title: the book's own, as its audio file's tags say it (the worker tagged it with
`--title`, else the document's metadata title, else a title from the document's file name), else a
title made from a file name: no folder, no extension, no `-0123456789` hash suffix that narrate
adds to the outputs of `POST /v1/narrations`, underscores read as spaces. Never a bare file name."""

from __future__ import annotations

import re
from pathlib import Path

from narrate.jobs.xmltext import xml_text

MAX_CHARS = 200
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")
_HASH = re.compile(r"-[0-9a-f]{10}$")  # jobs/web/submitting.py output_name


def _one_line(text: str) -> str:
    return " ".join(xml_text(text).split())[:MAX_CHARS].strip()


def from_file_name(name: str) -> str:
    """A title from a file name ("harbor-11d97576cb.m4b" -> "harbor", "my_book.epub" -> "my book");
    "" when nothing is left."""
    stem = _EXTENSION.sub("", name.replace("\\", "/").rsplit("/", 1)[-1])
    return _one_line(_HASH.sub("", stem).replace("_", " "))


def tagged(path: Path) -> str:
    """The book's title in an audio file's tags (album, else title); "" when it has none or mutagen
    cannot read the file (a WAV keeps its title where mutagen does not look)."""
    try:
        import mutagen

        found = mutagen.File(str(path), easy=True)
        tags = found.tags if found is not None else None
        if not tags:
            return ""
        for key in ("album", "title"):
            values = tags.get(key) or []
            if values and (title := _one_line(str(values[0]))):
                return title
    except Exception:  # noqa: BLE001 - a file mutagen cannot read has no title to show
        return ""
    return ""


def episode_title(audio: Path, document: str | None, fallback: str) -> str:
    """The title of an episode whose audio is `audio`, of a narration of the document named `document`."""
    return tagged(audio) or from_file_name(document or "") or from_file_name(audio.name) or fallback
