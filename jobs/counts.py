"""Counts for people: the number and the noun agreeing with it, one way everywhere."""

from __future__ import annotations


def count(n: int, word: str, plural: str | None = None) -> str:
    """`n` and the noun agreeing with it: 1 candidate, 3 candidates, 0 chapters (`plural`: where it is
    not `word` + "s", e.g. count(n, "entry", "entries"))."""
    return f"{n} {word if n == 1 else plural or word + 's'}"
