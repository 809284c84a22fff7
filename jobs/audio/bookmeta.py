"""What the person submitting a book asks of its output files (`--narrator`,
`--year`, `--cover`, `--subtitles`, `--loudness`, `--split`, `--max-part-hours`)."""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from dataclasses import dataclass, fields
from pathlib import Path

from narrate.jobs.constraints import READALONG_FORMATS, format_list
from narrate.jobs.errors import BadInput
from narrate.jobs.inputs import read_input

MAX_COVER_BYTES = 10 * 1024 * 1024


def parse_readalong(value: str | None, option: str = "--readalong") -> str:
    """`--readalong epub,manifest,w3c` in a canonical order ("" for none); BadInput naming what is unknown."""
    try:
        return format_list(value, READALONG_FORMATS)
    except ValueError as e:
        raise BadInput(f"{option}: {e}") from None


def image_kind(data: bytes) -> str | None:
    """'jpeg', 'png' or None."""
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    return None


def read_cover(path: Path) -> bytes:
    data = read_input(Path(path), f"cover {path}", MAX_COVER_BYTES, " (use a smaller JPEG or PNG)")
    if image_kind(data) is None:
        raise BadInput(f"cover {path} is not a JPEG or PNG image; give a .jpg or .png file")
    return data


MAX_TAG_CHARS = 200
_YEAR = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")  # what every tag format takes as a date: 2026, 2026-12, 2026-12-01


def clean_tag(text: str | None) -> str | None:
    """A tag's text on one line without control characters (a document's own metadata may hold
    any), at most MAX_TAG_CHARS; None when nothing is left."""
    if not text:
        return None
    one = " ".join("".join(ch for ch in text if unicodedata.category(ch) != "Cc" or ch.isspace()).split())
    return one[:MAX_TAG_CHARS] or None


def check_tag(option: str, value: str | None) -> str | None:
    """A tag given on the command line: refused (not silently changed) when it holds a control
    character or a line break, or is too long."""
    if not value:
        return None
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise BadInput(f"{option} {value!r}: holds a control character or line break; give one line of text")
    if len(value) > MAX_TAG_CHARS:
        raise BadInput(f"{option}: {len(value)} characters; at most {MAX_TAG_CHARS}")
    return value.strip() or None


def check_year(value: str | None, option: str = "--year") -> str | None:
    """`--year`: 2026, 2026-12 or 2026-12-01 (mp3's date frame drops anything else without a word)."""
    if not value:
        return None
    if not _YEAR.fullmatch(value.strip()):
        raise BadInput(f"{option} {value!r}: give a year such as 2026 (or a date such as 2026-12-01)")
    return value.strip()


def parse_loudness(value: str | float | None, option: str = "--loudness") -> float | None:
    """'off' -> None; '-19' -> -19.0 (a LUFS target between -40 and -5)."""
    if value is None:
        return -19.0
    if isinstance(value, str) and value.strip().lower() == "off":
        return None
    try:
        target = float(value)
    except ValueError:
        raise BadInput(f"{option} {value!r}: give a LUFS target such as -19 or -16, or off") from None
    if not math.isfinite(target) or not -40.0 <= target <= -5.0:
        raise BadInput(f"{option} {value!r}: a LUFS target between -40 and -5, such as -19 or -16, or off")
    return target


@dataclass(frozen=True)
class BookOptions:
    """Output options of a request, as the request model checked them (jobs/api/fields.py); they travel in the job
    spec."""

    subtitles: str = ""
    loudness: float | None = -19.0
    narrator: str | None = None
    author: str | None = None
    year: str | None = None
    cover: bytes | None = None
    split: str = ""
    max_part_hours: float | None = None
    title: str | None = None  # None: the document's
    series: str | None = None  # "Name" or "Name #2" (the document's, if it has one, when None)
    readalong: str = ""  # "epub,manifest,w3c": read-along files beside the audio (jobs/readalong)

    def cover_sha(self) -> str | None:
        return hashlib.sha256(self.cover).hexdigest() if self.cover else None

    def spec_fields(self) -> dict:
        """The JobSpec fields these options set (the cover as its hash: the image goes to the store)."""
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"cover": self.cover_sha()}


def series_parts(series: str | None) -> tuple[str, str]:
    """("Name", "2") of "Name #2" (Audiobookshelf's form), ("Name", "") of "Name"."""
    name, sep, index = (series or "").rpartition(" #")
    if sep and index and " " not in index and "#" not in index:
        return name.strip(), index
    return (series or "").strip(), ""


@dataclass(frozen=True)
class Tags:
    """What is embedded in an output file."""

    title: str | None = None
    album: str | None = None
    author: str | None = None
    narrator: str | None = None
    year: str | None = None
    track: tuple[int, int] | None = None  # (number, of)
    cover: bytes | None = None
    series: str | None = None  # a library export's (jobs/library): what Audiobookshelf reads as series
    series_part: str | None = None
