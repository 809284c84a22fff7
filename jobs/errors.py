"""Errors a user can act on, as data: each is a class (what went wrong, which front ends decide by:
an HTTP status, a page's flash, the CLI's exit), a `code` (a stable name, the HTTP API's
``error.code``), the `param` it is about (a field or option, if any) and `facts` (the names and
numbers a front end words its own message from). The message (``str(e)``) says what is wrong and
what to do, in the command line's words; a front end that speaks otherwise words its own from the
class and the facts, never by reading the message."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

# Control characters (a newline or a terminal escape sequence in a file name) and the stray
# surrogates Python uses for a Linux file name's non-UTF-8 bytes.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` as one line that a terminal shows as it is: unprintable characters escaped (\\n, \\x1b)."""
    return _UNPRINTABLE.sub(lambda m: ascii(m.group())[1:-1], text)


class NarrateError(Exception):
    """A problem with the user's input or environment; shown as a one-line error. `code` names the
    class of problem (a subclass has its own), `param` the field or option it is about, `facts` what
    a front end needs to word its own message."""

    code: ClassVar[str] = "error"

    def __init__(
        self, message: str = "", *args: object, param: str | None = None, facts: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(printable(str(message)), *args)
        self.param = param
        self.facts: dict[str, Any] = dict(facts or {})


class BadInput(NarrateError):
    """The document, voice, output path or a setting is not usable."""

    code = "bad_input"


class Conflict(BadInput):
    """The request is well formed, but what it is about is in a state that refuses it (a name taken,
    a voice still in use, a job that already ended). A BadInput too: the command line shows it alike."""

    code = "conflict"


class NotFound(NarrateError):
    """What the request names does not exist (or it expired)."""

    code = "not_found"


class ServerUnavailable(NarrateError):
    """The Redis/Valkey server cannot be reached or started."""

    code = "server_unavailable"


class JobNotFound(NotFound):
    """No job with that id exists (or it has expired)."""

    code = "job_not_found"
