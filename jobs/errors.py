"""Errors a user can act on. Each message says what is wrong and what to do."""

from __future__ import annotations

import re

# Control characters (a newline or a terminal escape sequence in a file name) and the stray
# surrogates Python uses for a Linux file name's non-UTF-8 bytes.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` as one line that a terminal shows as it is: unprintable characters escaped (\\n, \\x1b)."""
    return _UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], text)


class NarrateError(Exception):
    """A problem with the user's input or environment; shown as a one-line error."""

    def __init__(self, message: str = "", *args: object) -> None:
        super().__init__(printable(str(message)), *args)


class BadInput(NarrateError):
    """The document, voice, output path or a setting is not usable."""


class ServerUnavailable(NarrateError):
    """The Redis/Valkey server cannot be reached or started."""


class JobNotFound(NarrateError):
    """No job with that id exists (or it has expired)."""
