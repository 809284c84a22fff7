"""Markdown front matter as the book's metadata: a YAML block between `---` lines (or TOML between
`+++` lines, as Hugo writes it) at the very top of a Markdown file gives the title, author,
language and the library's fields, as static-site generators and e-book tools (pandoc, Jekyll,
Hugo) read it, and is not read aloud. A block that does not parse as a mapping is left as text."""

from __future__ import annotations

import datetime as dt
import re
import tomllib

import yaml
from narrate.jobs.documents.documents import BookMeta

MAX_CHARS = 64 * 1024  # front matter is a few lines; a longer block is the text itself
_YAML = re.compile(r"\A\ufeff?---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_TOML = re.compile(r"\A\ufeff?\+\+\+[ \t]*\n(.*?)\n\+\+\+[ \t]*(?:\n|\Z)", re.DOTALL)
# Each BookMeta field and the keys people write it under (the first one present wins).
_KEYS = {
    "title": ("title",),
    "author": ("author", "authors", "creator", "creators"),
    "language": ("language", "lang"),
    "description": ("description", "summary", "abstract"),
    "date": ("date", "published"),
    "publisher": ("publisher",),
    "series": ("series", "belongs-to-collection"),
    "series_index": ("series_index", "series-index", "position"),
    "isbn": ("isbn",),
}
_LIMITS = {"description": 4000, "date": 10}


def split_front_matter(text: str) -> tuple[BookMeta | None, str]:
    """(the metadata of `text`'s front matter, the text after it); (None, text) when it has none."""
    text = text.replace("\r\n", "\n")
    for pattern, load in ((_YAML, _yaml), (_TOML, _toml)):
        m = pattern.match(text)
        if m and len(m.group(1)) <= MAX_CHARS:
            data = load(m.group(1))
            if isinstance(data, dict):
                return _meta(data), text[m.end() :]
    return None, text


def _yaml(block: str) -> object:
    try:
        return yaml.safe_load(block)
    except yaml.YAMLError:
        return None


def _toml(block: str) -> object:
    try:
        return tomllib.loads(block)
    except tomllib.TOMLDecodeError:
        return None


def _meta(data: dict) -> BookMeta:
    lowered = {str(k).lower(): v for k, v in data.items()}
    fields = {}
    for name, keys in _KEYS.items():
        value = next((lowered[k] for k in keys if k in lowered and lowered[k] not in (None, "")), None)
        fields[name] = " ".join(_text(value).split())[: _LIMITS.get(name, 200)]
    f = fields
    return BookMeta(
        title=f["title"],
        author=f["author"],
        language=f["language"],
        description=f["description"],
        date=f["date"],
        publisher=f["publisher"],
        series=f["series"],
        series_index=f["series_index"],
        isbn=f["isbn"],
    )


def _text(value: object) -> str:
    """A scalar as written, a list as its items joined with commas (several authors), a mapping's
    `name` (an author written as {name: ..., email: ...})."""
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, list):
        return ", ".join(t for t in (_text(v) for v in value[:20]) if t)
    if isinstance(value, dict):
        return _text(value.get("name") or value.get("text") or "")
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    return ""
