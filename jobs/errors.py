"""Errors a user can act on. Each message says what is wrong and what to do."""

from __future__ import annotations


class NarrateError(Exception):
    """A problem with the user's input or environment; shown as a one-line error."""


class BadInput(NarrateError):
    """The document, voice, output path or a setting is not usable."""


class ServerUnavailable(NarrateError):
    """The Redis/Valkey server cannot be reached or started."""


class JobNotFound(NarrateError):
    """No job with that id exists (or it has expired)."""
