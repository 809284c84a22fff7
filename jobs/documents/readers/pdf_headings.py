"""Headings of a PDF that has no outline, from how its text is set: a short line in a clearly
larger size than the body text (the size most characters are set in) is a heading, and so is a
bold line in the body size that names itself a chapter ("Chapter 3", "PART TWO", "Prologue").
Sizes rank heading levels (the largest is level 1); which levels start chapters is decided as for
HTML headings (blocks.chapter_level)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

LARGER = 1.15  # a heading's size over the body size
MAX_CHARS = 120
MAX_WORDS = 15
_CHAPTER_WORD = re.compile(
    r"^(chapter|part|book|prologue|epilogue|preface|introduction|afterword|appendix)\b", re.IGNORECASE
)
_SPACES = re.compile(r"\s+")


def _key(line: str) -> str:
    return _SPACES.sub(" ", line).strip()


def _scale(m: list[float]) -> float:
    """The vertical scale of a PDF matrix [a b c d e f] (1 for a degenerate one)."""
    return math.sqrt(abs(float(m[0]) * float(m[3]) - float(m[1]) * float(m[2]))) or 1.0


def _effective(size: object, tm: list[float], cm: list[float]) -> float:
    """The size text is drawn at (0 when a broken PDF says nothing usable: never a heading)."""
    try:
        value = float(size) * _scale(tm) * _scale(cm)  # type: ignore[arg-type]
    except (TypeError, ValueError, IndexError, ZeroDivisionError):
        return 0.0
    return round(value, 1) if math.isfinite(value) and value > 0 else 0.0


class PageSizes:
    """pypdf's ``visitor_text``: the size and boldness of every line of one page's text."""

    def __init__(self) -> None:
        self.lines: dict[str, tuple[float, bool]] = {}  # line -> (largest size, all bold)
        self.chars: Counter[float] = Counter()  # characters set in each size
        self._text = ""
        self._size = 0.0
        self._bold = True

    def __call__(self, text: str, cm: list[float], tm: list[float], font: dict | None, size: float) -> None:
        parts = text.split("\n")
        for i, part in enumerate(parts):
            if i:
                self._end_line()
            if part.strip():
                effective = _effective(size, tm, cm)
                self._text += part
                self._size = max(self._size, effective)
                self._bold = self._bold and "bold" in str((font or {}).get("/BaseFont", "")).lower()
                if effective:
                    self.chars[effective] += len(part.strip())
            else:
                self._text += part

    def _end_line(self) -> None:
        key = _key(self._text)
        if key:
            size, bold = self.lines.get(key, (0.0, True))
            self.lines[key] = (max(size, self._size), bold and self._bold)
        self._text, self._size, self._bold = "", 0.0, True

    def finish(self) -> PageSizes:
        self._end_line()
        return self


def heading_levels(pages: Iterable[PageSizes], kept: list[list[str]]) -> list[dict[str, int]]:
    """For each page, its heading lines (among `kept`, the lines left after running heads are
    removed) and their level (1 = largest)."""
    pages = list(pages)
    chars: Counter[float] = Counter()
    for page in pages:
        chars.update(page.chars)
    if not chars:
        return [{} for _ in pages]
    body = chars.most_common(1)[0][0]
    found: list[dict[str, float]] = []
    for page, lines in zip(pages, kept, strict=True):
        here: dict[str, float] = {}
        for line in lines:
            key = _key(line)
            size, bold = page.lines.get(key, (0.0, False))
            if not (re.search(r"[^\W\d_]", key) and len(key) <= MAX_CHARS and len(key.split()) <= MAX_WORDS):
                continue
            if size >= LARGER * body:
                here[key] = size
            elif bold and _CHAPTER_WORD.match(key) and size >= body > 0:
                here[key] = body * LARGER  # ranks as the smallest heading size
        found.append(here)
    sizes = sorted({s for page in found for s in page.values()}, reverse=True)
    rank = {s: i + 1 for i, s in enumerate(sizes)}
    return [{key: rank[s] for key, s in page.items()} for page in found]
