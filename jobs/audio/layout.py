"""Which audio files a book becomes: the book file (whole, or in parts of at most
`max_part_hours` cut at chapter boundaries) and, with `--split chapters`, one file per chapter in a
folder named after the output's stem: ``book.m4b`` -> ``book/book - 01 - Title.m4b``. Parts sit
beside the output: ``book - part 1 of 3.m4b``."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_UNSAFE = re.compile(r'[\\/:*?"<>|]+')
MAX_TITLE_CHARS = 80


@dataclass(frozen=True)
class Piece:
    folder: tuple[str, ...]  # below the output's directory
    name: str
    start: int  # samples of the book
    end: int
    title: str
    chapters: list[tuple[int, int, str]]  # spans inside it, relative to its start
    track: tuple[int, int] | None = None


def safe_title(title: str, limit: int = MAX_TITLE_CHARS, fallback: str = "Untitled") -> str:
    """A file or folder name from a title: no separators, reserved or control characters, no
    leading or trailing dot or space, at most `limit` characters."""
    clean = "".join(" " if unicodedata.category(c).startswith("C") else c for c in title)
    clean = " ".join(_UNSAFE.sub(" ", clean).split()).strip(". ")
    return clean[:limit].rstrip(". ") or fallback


def _inside(spans: list[tuple[int, int, str]], start: int, end: int) -> list[tuple[int, int, str]]:
    return [(s - start, e - start, t) for s, e, t in spans if start <= s < end]


def pieces(
    name: str,
    title: str | None,
    samples: int,
    spans: list[tuple[int, int, str]],
    split: str,
    max_part_samples: int | None,
    numbers: list[int] | None = None,
) -> list[Piece]:
    """The files, in order: the book (or its parts) unless split is 'chapters', then the chapters.
    `numbers`: each chapter's number in the whole book, for its file's name (a book read with
    `--chapters 1,3` names chapter 3 "03"); else they are numbered 1, 2, ..."""
    stem, dot, ext = name.rpartition(".")
    stem, ext = (stem, "." + ext) if dot else (name, "")
    out: list[Piece] = []
    chapters = spans or [(0, samples, title or stem)]
    if split != "chapters":
        groups = _parts(chapters, max_part_samples) if max_part_samples else [chapters]
        if len(groups) == 1:
            out.append(Piece((), name, 0, samples, title or stem, spans))
        else:
            for n, group in enumerate(groups, 1):
                start, end = group[0][0], group[-1][1]
                label = f"{stem} - part {n} of {len(groups)}"
                out.append(
                    Piece(
                        (),
                        f"{label}{ext}",
                        start,
                        end,
                        f"{title or stem}, part {n}",
                        _inside(spans, start, end),
                        (n, len(groups)),
                    )
                )
    if split in ("chapters", "chapters+book"):
        named = numbers if numbers and len(numbers) == len(chapters) else range(1, len(chapters) + 1)
        width = max(2, len(str(max(named))))
        for n, ((start, end, t), number) in enumerate(zip(chapters, named, strict=True), 1):
            fname = f"{stem} - {number:0{width}d} - {safe_title(t)}{ext}"
            out.append(Piece((stem,), fname, start, end, t, [], (n, len(chapters))))
    return out


def _parts(chapters: list[tuple[int, int, str]], limit: int) -> list[list[tuple[int, int, str]]]:
    """Consecutive chapters grouped greedily so each group lasts at most `limit` samples (a
    chapter longer than that is a part of its own)."""
    groups: list[list[tuple[int, int, str]]] = []
    for ch in chapters:
        if groups and ch[1] - groups[-1][0][0] <= limit:
            groups[-1].append(ch)
        else:
            groups.append([ch])
    return groups
