"""How each NARRATE_* variable's text becomes its value (jobs/settings.py): whole numbers, seconds,
gigabytes, paths, choices, comma-separated names and pairs, http(s) addresses. Each raises
BadInput naming the variable and saying what it takes (a quantization: ``check_quant``). ``setting``
declares one field of Settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, field
from pathlib import Path
from typing import Any

from narrate.jobs.errors import BadInput

QUANTS = ("bf16", "4bit", "6bit", "8bit", "float32")


def whole(minimum: int, maximum: int | None = None) -> Callable[[str, str], int]:
    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise BadInput(f"{name}={raw!r} is not a whole number") from None
        if value < minimum:
            raise BadInput(f"{name}={raw!r} must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise BadInput(f"{name}={raw!r} must be at most {maximum}")
        return value

    return parse


def seconds(minimum: float, unit: str = "seconds") -> Callable[[str, str], float]:
    def parse(name: str, raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise BadInput(f"{name}={raw!r} is not a number of {unit}") from None
        if not value >= minimum or value == float("inf"):
            raise BadInput(f"{name}={raw!r} must be a finite number of {unit}, at least {minimum}")
        return value

    return parse


def gigabytes(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise BadInput(f"{name}={raw!r} is not a number of gigabytes") from None
    if not 0 <= value < float("inf"):
        raise BadInput(f"{name}={raw!r} must be a finite number of gigabytes, at least 0")
    return value


def path(_name: str, raw: str) -> Path:
    return Path(raw).expanduser()


def choice(options: tuple[str, ...]) -> Callable[[str, str], str]:
    def parse(name: str, raw: str) -> str:
        if raw not in options:
            raise BadInput(f"{name}={raw!r}: use one of {', '.join(options)}")
        return raw

    return parse


def names(_name: str, raw: str) -> tuple[str, ...]:
    return tuple(h.strip() for h in raw.split(",") if h.strip())


def pairs(name: str, raw: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    for entry in (e.strip() for e in raw.split(",")):
        key, sep, value = entry.partition("=")
        if not entry:
            continue
        if not sep or not key.strip() or not value.strip():
            raise BadInput(f"{name}: {entry!r} is not NAME=VOICE; give pairs such as alloy=alice,onyx=ryan")
        pairs.append((key.strip().lower(), value.strip()))
    return tuple(pairs)


def text(_name: str, raw: str) -> str:
    return raw


def url(name: str, raw: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadInput(f"{name}={raw!r}: give an http(s) address such as http://narrate.local:8000")
    return raw.strip().rstrip("/")


def check_quant(quant: str | None) -> str | None:
    """A quantization's name (NARRATE_QUANT, --quant), or None."""
    if quant is not None and quant not in QUANTS:
        raise BadInput(f"unknown quantization {quant!r}: choose one of {', '.join(QUANTS)}")
    return quant


def setting(
    env: str,
    default: Any = MISSING,
    *,
    reads: str,
    doc: str,
    parse: Callable[[str, str], Any] = text,
    factory: Callable[[], Any] | None = None,
    shown: str | None = None,
) -> Any:
    """A Settings field: its variable, default (or default factory), reader, description."""
    meta = {"env": env, "reads": reads, "doc": doc, "parse": parse, "shown": shown}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)
