"""Cleaning decoded text for speech: line breaks made uniform, and what cannot be spoken removed
(terminal escape sequences, control characters, noncharacters, invisible format characters, floods of
combining marks) before the text is split into sentences."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Combining marks one letter may carry: Vietnamese, Devanagari or pointed Hebrew need 2-4;
# "Zalgo" text stacks hundreds, which only lengthens the tokens the model is given.
MAX_COMBINING_MARKS = 8

_LINE_BREAKS = str.maketrans({"\r": "\n", "\x85": "\n", "\u2028": "\n", "\u2029": "\n\n"})
# CSI (colours, cursor moves), OSC (titles, links) and two-character escape sequences.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_SPACING_CONTROLS = re.compile(r"[\x0b\x0c\x1c-\x1f]+")  # vertical tab, form feed, separators: spaces
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x9f]+")  # the others (bell, backspace, C1...): nothing
# Noncharacters (U+FDD0-U+FDEF and the last two of every plane: U+FFFE, U+FFFF, ...) and lone
# surrogates: no text holds them, and XML 1.0 refuses some (an EPUB's pages, SMIL and package).
_NONCHARACTERS = re.compile(
    "[\ufdd0-\ufdef\ufffe\uffff\ud800-\udfff"
    + "".join(f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}" for plane in range(1, 17))
    + "]+"
)


def clean_text(text: str) -> str:
    text = text.replace("\r\n", "\n").translate(_LINE_BREAKS)
    text = _SPACING_CONTROLS.sub(" ", _NONCHARACTERS.sub("", _CONTROLS.sub("", _ESCAPES.sub("", text))))
    text = unicodedata.normalize("NFC", text)
    chars = set(text)
    format_chars = {ord(ch): None for ch in chars if unicodedata.category(ch) == "Cf"}
    marks = sorted(ch for ch in chars if ch <= "\uffff" and unicodedata.category(ch) in ("Mn", "Me"))
    return _mark_runs("".join(marks)).sub(_trim_marks, text.translate(format_chars) if format_chars else text)


def _trim_marks(run: re.Match[str]) -> str:
    out, marks = [], 0
    for ch in run.group(0):
        marks = marks + 1 if unicodedata.category(ch)[0] == "M" else 0
        if marks <= MAX_COMBINING_MARKS:
            out.append(ch)
    return "".join(out)


@lru_cache(maxsize=64)
def _mark_runs(marks: str) -> re.Pattern[str]:
    """Runs that may hold too many combining marks: of the BMP marks (Mn, Me) `marks`, or of any
    character beyond the BMP (a class of single BMP characters is a fast bitmap; astral ranges
    are not, so those runs are checked one character at a time). Only the marks a text holds are
    in its class (a match only ever looks at the text's own characters), and only its format
    characters (Cf: zero-width spaces and joiners, bidirectional controls, soft hyphens,
    byte-order marks, tag characters) are deleted: no pass over the whole Unicode database
    (about 0.3-0.7 s at every start on a small CPU)."""
    bmp = f"[{''.join(map(re.escape, marks))}]|" if marks else ""
    return re.compile(f"(?:{bmp}[\U00010000-\U0010ffff]){{{MAX_COMBINING_MARKS + 1},}}")
