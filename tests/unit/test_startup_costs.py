"""What `narrate run` and the other commands no longer pay at every start (tests/bench/e2e_bench.py measures
the seconds): text cleaning without a pass over the whole Unicode database, cleaning exactly as that pass
did."""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

import numpy as np
from narrate.jobs.documents import cleaning


@functools.cache
def _whole_database() -> tuple[dict[int, None], re.Pattern[str]]:
    fmt: dict[int, None] = {}
    marks = []
    for code in range(sys.maxunicode + 1):
        cat = unicodedata.category(chr(code))
        if cat == "Cf":
            fmt[code] = None
        elif cat in ("Mn", "Me") and code <= 0xFFFF:
            marks.append(re.escape(chr(code)))
    run = f"(?:[{''.join(marks)}]|[\U00010000-\U0010ffff]){{{cleaning.MAX_COMBINING_MARKS + 1},}}"
    return fmt, re.compile(run)


def _clean_with_the_whole_database(text: str) -> str:
    """clean_text as it was: its format characters and mark runs from one pass over every code point."""
    text = text.replace("\r\n", "\n").translate(cleaning._LINE_BREAKS)
    text = cleaning._SPACING_CONTROLS.sub(" ", cleaning._CONTROLS.sub("", cleaning._ESCAPES.sub("", text)))
    text = unicodedata.normalize("NFC", text)
    fmt, run = _whole_database()
    return run.sub(cleaning._trim_marks, text.translate(fmt))


def test_cleaning_without_the_database_pass_is_the_same():
    rng = np.random.default_rng(3)
    pieces = [
        "a",
        "Z",
        " ",
        ".",
        "é",
        "\u0301",
        "\u0300",
        "\u20dd",
        "\u0489",
        "\u200b",
        "\u200d",
        "\u00ad",
        "\ufeff",
        "\U000e0041",
        "\U0001f600",
        "\U0001d165",
        "\r\n",
        "\u2028",
        "\x1b[31m",
        "\x0b",
        "\x07",
        "\u05b8",
        "ą",
        "e" + "\u0301" * 12,
        "\U0001f600" * 12,
        "\u0627\u064e" * 6,
    ]
    texts = ["", "Plain words.", "Zalgo: Z" + "\u0301" * 40 + "a", "\U0001f600" * 20]
    texts += ["".join(rng.choice(pieces, size=rng.integers(1, 120))) for _ in range(300)]
    for text in texts:
        assert cleaning.clean_text(text) == _clean_with_the_whole_database(text), repr(text)
