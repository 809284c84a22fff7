"""How each NARRATE_* variable's text becomes its value (jobs/settings.py): the field types of ``Settings``, each a
pydantic type with a before-validator that takes the variable's text (or a value given in code) and refuses what it
cannot use. A refusal is a ``Refused`` worded to follow the variable's name (``NARRATE_MAX_FRAMES='lots' is not a
whole number``); ``Settings.from_env`` puts the name in front and raises ``BadInput``. A quantization's name is
checked by ``check_quant`` (NARRATE_QUANT, --quant)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from narrate.jobs.errors import BadInput
from pydantic import BeforeValidator
from pydantic_settings import NoDecode

QUANTS = ("bf16", "4bit", "6bit", "8bit", "float32")


class Refused(ValueError):
    """What is wrong with a setting's value, worded to follow the setting's name."""


def _whole(minimum: int, maximum: int | None) -> Callable[[Any], int | None]:
    def parse(raw: Any) -> int | None:
        if raw is None:  # an optional setting left unset (its type refuses None otherwise)
            return None
        try:
            value = int(raw) if isinstance(raw, str) else raw
        except ValueError:
            raise Refused(f"={raw!r} is not a whole number") from None
        if not isinstance(value, int) or isinstance(value, bool):
            raise Refused(f"={raw!r} is not a whole number")
        if value < minimum:
            raise Refused(f"={str(raw)!r} must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise Refused(f"={str(raw)!r} must be at most {maximum}")
        return value

    return parse


def _number(minimum: float, unit: str) -> Callable[[Any], float | None]:
    def parse(raw: Any) -> float | None:
        if raw is None:
            return None
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise Refused(f"={raw!r} is not a number of {unit}") from None
        if not value >= minimum or value == float("inf"):
            raise Refused(f"={str(raw)!r} must be a finite number of {unit}, at least {minimum}")
        return value

    return parse


def _choice(options: tuple[str, ...]) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        if raw not in options:
            raise Refused(f"={raw!r}: use one of {', '.join(options)}")
        return str(raw)

    return parse


def _names(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        return tuple(h.strip() for h in raw.split(",") if h.strip())
    return tuple(raw)


def _pairs(raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, str):
        return tuple((str(k), str(v)) for k, v in raw)
    pairs = []
    for entry in (e.strip() for e in raw.split(",")):
        key, sep, value = entry.partition("=")
        if not entry:
            continue
        if not sep or not key.strip() or not value.strip():
            raise Refused(f": {entry!r} is not NAME=VOICE; give pairs such as alloy=alice,onyx=ryan")
        pairs.append((key.strip().lower(), value.strip()))
    return tuple(pairs)


def _url(raw: Any) -> str:
    parts = urlsplit(str(raw).strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Refused(f"={raw!r}: give an http(s) address such as http://narrate.local:8000")
    return str(raw).strip().rstrip("/")


def _quant(raw: Any) -> str | None:
    if not is_quant(raw):
        raise Refused(f"={raw!r}: choose one of {', '.join(QUANTS)}")
    return None if raw is None else str(raw)


def is_quant(value: Any) -> bool:
    """None (the model's own) or a quantization's name: the one test of ``Quant`` and ``check_quant``."""
    return value is None or value in QUANTS


def whole(minimum: int, maximum: int | None = None) -> BeforeValidator:
    """A whole number from `minimum` to `maximum` (``Annotated[int, whole(1)]``)."""
    return BeforeValidator(_whole(minimum, maximum))


def number(minimum: float, unit: str = "seconds") -> BeforeValidator:
    """A finite number of `unit`, at least `minimum` (seconds, megabytes, a rate)."""
    return BeforeValidator(_number(minimum, unit))


def choice(*options: str) -> BeforeValidator:
    """One of `options`."""
    return BeforeValidator(_choice(options))


UserPath = Annotated[Path, BeforeValidator(lambda raw: Path(raw).expanduser())]
Names = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_names)]  # comma-separated, not JSON
Pairs = Annotated[tuple[tuple[str, str], ...], NoDecode, BeforeValidator(_pairs)]  # NAME=VALUE,...
Url = Annotated[str, BeforeValidator(_url)]
Quant = Annotated[str | None, BeforeValidator(_quant)]


def check_quant(quant: str | None) -> str | None:
    """A quantization's name (NARRATE_QUANT, --quant), or None."""
    if not is_quant(quant):
        raise BadInput(f"unknown quantization {quant!r}: choose one of {', '.join(QUANTS)}")
    return quant
