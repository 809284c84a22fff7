"""Voice names: case-insensitive slugs (stored lower case)."""

from __future__ import annotations

import re

from narrate.jobs.errors import BadInput

NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
RESERVED = frozenset({"narrator"})  # the cast's narrator (a book's default voice)


def is_name(text: str) -> bool:
    """Could `text` be a voice name (any case)?"""
    return bool(NAME.fullmatch(text.lower()))


def check_name(text: str) -> str:
    """The name in lower case; raises BadInput saying what a name may be."""
    name = text.strip().lower()
    if not NAME.fullmatch(name):
        raise BadInput(
            f"voice name {text!r} is not valid: use 1-64 letters, digits, '-' or '_', starting with a letter "
            "or digit (names are case-insensitive)"
        )
    if name in RESERVED:
        raise BadInput(f"voice name {name!r} is reserved (a book's narrator); choose another")
    return name
