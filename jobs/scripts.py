"""narrate's Redis Lua scripts, kept as package data in jobs/lua/ (one ``NAME.lua`` each, with what
its KEYS and ARGV are at its top) and read once when the module that runs it is imported."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def load_script(name: str) -> str:
    """The text of jobs/lua/NAME.lua."""
    return (files("narrate.jobs") / "lua" / f"{name}.lua").read_text(encoding="utf-8")
