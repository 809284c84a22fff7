"""A tagged draft for a person to review (`narrate cast DOC --draft tagged.txt`): narrate's markup
added to a text file where a deterministic rule names the speaker of a quote, next to it and in the
same paragraph: `"...," Alice said.`, `"...," said Alice.`, `Alice asked, "..."`. The names are the
cast's members and aliases. Nothing but tags is ever added: no word, space or line of the text
changes (a bracket that would read as a tag is escaped, `\\[`), so removing the tags gives the file
back. Quotes no rule attributes are left alone."""

from __future__ import annotations

import re

from narrate.jobs.cast.declare import Cast
from narrate.jobs.cast.markup import TAG, tag
from narrate.jobs.cast.quotes import speech_spans

VERBS = (
    "said says asked asks replied replies answered answers whispered whispers shouted shouts cried cries called "
    "calls muttered mutters murmured murmurs added adds continued continues exclaimed exclaims yelled yells snapped "
    "snaps sighed sighs laughed laughs began begins insisted insists agreed agrees demanded demands told tells"
).split()
_PARAGRAPHS = re.compile(r"(\n[ \t]*\n)")


def draft(text: str, cast: Cast) -> tuple[str, int]:
    """`text` with tags added before the quotes a rule attributes (and `[/]` after them), and how
    many quotes were tagged."""
    names = {label: label for label in cast.members} | {alias: label for alias, label in cast.aliases.items()}
    if not names:
        return _escape_tags(text, cast), 0
    name = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    verb = "|".join(VERBS)
    after = re.compile(rf"\s*[,;:]?\s*(?:(?P<a>{name})\s+(?:{verb})|(?:{verb})\s+(?P<b>{name}))\b", re.I)
    before = re.compile(rf"\b(?P<c>{name})\s+(?:{verb})\s*[,:]?\s*$", re.I)
    lookup = {alias.casefold(): label for alias, label in names.items()}
    pieces = _PARAGRAPHS.split(text)
    paragraphs = pieces[::2]
    spans = speech_spans(paragraphs)
    tagged = 0
    out = []
    for i, piece in enumerate(pieces):
        if i % 2:
            out.append(piece)
            continue
        inserts: list[tuple[int, str]] = []
        for start, end in spans[i // 2]:
            m = after.match(piece, end) or before.search(piece, 0, start)
            if m is None:
                continue
            who = next(g for g in m.groups() if g)
            label = lookup.get(who.casefold()) or cast.resolve(who)
            if label is None:
                continue
            inserts += [(start, tag(label)), (end, tag("narrator"))]
            tagged += 1
        out.append(_insert_escaped(piece, inserts, cast))
    return "".join(out), tagged


def _insert(text: str, inserts: list[tuple[int, str]]) -> str:
    for at, what in sorted(inserts, reverse=True):
        text = text[:at] + what + text[at:]
    return text


def _insert_escaped(text: str, inserts: list[tuple[int, str]], cast: Cast) -> str:
    """Insert into the original text, escaping each bracket that would read as a tag, in one pass."""
    marks = sorted(inserts + [(m.start(), "\\") for m in _tags(text, cast)])
    return _insert(text, marks)


def _escape_tags(text: str, cast: Cast) -> str:
    return _insert(text, [(m.start(), "\\") for m in _tags(text, cast)])


def _tags(text: str, cast: Cast) -> list[re.Match[str]]:
    """The brackets of `text` that narrate's markup would read as a tag of this cast."""
    return [m for m in TAG.finditer(text) if m.group(1) is not None and cast.resolve(m.group(1)) is not None]
