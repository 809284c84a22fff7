"""narrate's markup, read from one paragraph at a time, before it is split into sentences:

- `[alice]` switches to alice until the next tag or the end of the paragraph; `[alice:whisper]` a
  variant; `[Mr. Darcy]` an alias; `[narrator]` or `[/]` back to the narrator. Every paragraph
  starts with the narrator.
- `[word]` is a tag only if the cast declares `word` (any case): `[Fireball]`, `[1]`, `[sic]` stay
  book text, and those that look like a tag (a name, or name:variant, or a capitalized name of a few
  words as aliases are written: `[Mr. Darcy]`) are reported as naming nobody.
- `\\[` is a literal `[` (so `\\[alice]` is read as the text "[alice]").

A tag inside a sentence ends the run there: the sentence is split where the voice changes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from narrate.jobs.cast.declare import LABEL, Cast
from narrate.jobs.documents.voicing import NARRATOR, Run

TAG = re.compile(r"\\\[|\[([^\[\]\n]{1,100})\]")
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")
_ALIAS_LIKE = re.compile(r"[^\W\d_][\w'\u2019.-]*(?:\s+[^\W\d_][\w'\u2019.-]*){1,3}")  # 2-4 words


@dataclass
class Marked:
    """One paragraph read: its runs, whether it held a tag, and the tag-like words that name nobody."""

    runs: list[Run] = field(default_factory=list)
    tagged: bool = False
    unknown: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The paragraph's text with its tags removed and its escapes undone."""
        return " ".join(text for _, text in self.runs)


def looks_like_tag(word: str) -> bool:
    """Would a person have meant `[word]` as a tag? A name or name:variant, not a number; or a
    capitalized name of a few words, as an alias is written (`[Mr. Darcy]`, `[Lady Catherine]`)."""
    word = word.strip()
    if LABEL.fullmatch(word.lower()):
        return not _DIGITS.fullmatch(word)
    return bool(_ALIAS_LIKE.fullmatch(word)) and word[0].isupper()


def read_markup(paragraph: str, cast: Cast) -> Marked:
    """One paragraph's runs (voice, text), tags removed, escapes undone, runs of one voice merged."""
    out = Marked()
    voice = NARRATOR
    buf: list[str] = []
    pos = 0
    for m in TAG.finditer(paragraph):
        buf.append(paragraph[pos : m.start()])
        pos = m.end()
        if m.group(1) is None:  # \[
            buf.append("[")
            continue
        label = cast.resolve(m.group(1))
        if label is None:
            buf.append(m.group(0))
            if looks_like_tag(m.group(1)):
                out.unknown.append(m.group(0))
            continue
        out.tagged = True
        _flush(out.runs, voice, buf)
        voice = label
    buf.append(paragraph[pos:])
    _flush(out.runs, voice, buf)
    return out


def tag(label: str) -> str:
    """The tag that switches to `label` (what the importers write)."""
    return "[/]" if label == NARRATOR else f"[{label}]"


def escape(text: str) -> str:
    """Book text written into narrate's markup: every bracket kept as text."""
    return text.replace("[", "\\[")


def _flush(runs: list[Run], voice: str, buf: list[str]) -> None:
    text = _SPACES.sub(" ", "".join(buf)).strip()
    buf.clear()
    if not text:
        return
    if runs and runs[-1][0] == voice:
        runs[-1] = (voice, f"{runs[-1][1]} {text}")
    else:
        runs.append((voice, text))
