"""Where a book goes in a library: Audiobookshelf's `Author/[Series/]Vol N - Year - Title {Narrator}`
(the parts its scanner reads from folder names), Plex's `Author/Title`, or `flat` (`Title`). Each
part is made safe as a folder name on macOS, Linux and Windows shares."""

from __future__ import annotations

from pathlib import PurePath

from narrate.jobs.audio.layout import safe_title
from narrate.jobs.errors import BadInput
from narrate.jobs.library.metadata import BookInfo

LAYOUTS = ("abs", "plex", "flat")
MAX_PART = 120


def safe_part(text: str, fallback: str) -> str:
    """A folder name (jobs/audio/layout.py `safe_title`, longer)."""
    return safe_title(text, MAX_PART, fallback)


def check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise BadInput(f"layout {layout!r}: use one of {', '.join(LAYOUTS)}")
    return layout


def folder(info: BookInfo, layout: str) -> PurePath:
    """The book's folder, relative to the library."""
    title = safe_part(info.title, "Untitled")
    if check_layout(layout) == "flat":
        return PurePath(title)
    author = safe_part(", ".join(info.authors), "Unknown Author")
    if layout == "plex":
        return PurePath(author, title)
    name = " - ".join(
        p for p in (f"Vol {info.series_index}" if info.series and info.series_index else "", info.year, title) if p
    )
    if info.narrators:
        name += " {" + safe_part(", ".join(info.narrators), "narrate").replace("{", "(").replace("}", ")") + "}"
    parts = [author, safe_part(info.series, "")] if info.series else [author]
    return PurePath(*parts, safe_part(name, title))
