"""Pronunciation lexicons (`--lexicon FILE`): one entry a line, `word = spoken form` or
`word<TAB>spoken form`; `#` at the start of a line or after a space starts a comment (`C# = C sharp`
is an entry), blank lines are skipped. A word may be several
words ("New York"). Entries match whole words, case-sensitively ("Nguyen" is not "nguyen"), the
longest entry first, before the built-in normalization (jobs.documents.normalize)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from narrate.jobs.errors import BadInput
from narrate.jobs.inputs import read_input

MAX_LEXICON_BYTES = 256 * 1024
MAX_ENTRY_CHARS = 200

_COMMENT = re.compile(r"(^|\s)#.*$")  # a line starting with '#', or ' # ...' after an entry: "C# = C sharp" is an entry
Lexicon = list[list[str]]  # [[word, spoken], ...]: plain JSON in the job spec


def read_lexicon(path: Path) -> Lexicon:
    """Read and validate a lexicon file; BadInput names the first malformed line."""
    label = f"lexicon {path}"
    raw = read_input(Path(path), label, MAX_LEXICON_BYTES)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput(f"{label} is not UTF-8 text (save it as UTF-8)", param="lexicon") from None
    return parse_lexicon(text, label)


def parse_lexicon(text: str, label: str = "lexicon") -> Lexicon:
    entries: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = _COMMENT.sub("", line).strip()
        if not line:
            continue
        if "\t" in line:
            word, _, spoken = line.partition("\t")
        elif "=" in line:
            word, _, spoken = line.partition("=")
        else:
            raise BadInput(
                f"{label} line {number}: expected 'word = spoken form' (or word<TAB>spoken form)", param="lexicon"
            )
        word, spoken = _entry(word, spoken, f"{label} line {number}")
        entries[word] = spoken  # a later line wins
    return [[w, s] for w, s in entries.items()]


def lexicon_of(pairs: Mapping[str, str], label: str = "lexicon") -> Lexicon:
    """A lexicon given as {word: spoken form} (the HTTP API's), checked as a file's lines are."""
    entries: dict[str, str] = {}
    for word, spoken in pairs.items():
        word, spoken = _entry(word, spoken, f"{label} entry {word[:40]!r}")
        entries[word] = spoken
    return [[w, s] for w, s in entries.items()]


def _entry(word: str, spoken: str, where: str) -> tuple[str, str]:
    """One entry, its spaces folded; BadInput (param `lexicon`) says what is wrong with it, at `where`."""
    word, spoken = " ".join(word.split()), " ".join(spoken.split())
    if not word or not spoken:
        raise BadInput(f"{where}: both the word and its spoken form are needed", param="lexicon")
    if len(word) > MAX_ENTRY_CHARS or len(spoken) > MAX_ENTRY_CHARS:
        raise BadInput(f"{where}: an entry may have at most {MAX_ENTRY_CHARS} characters a side", param="lexicon")
    if not re.search(r"\w", word):
        raise BadInput(f"{where}: the word {word!r} has no letters or digits", param="lexicon")
    return word, spoken
