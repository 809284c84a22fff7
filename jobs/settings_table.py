"""The settings table of docs/settings.md, made from the fields of jobs/settings.py
(`python -m narrate.jobs.settings_table` prints it; a test checks the page holds it)."""

from __future__ import annotations

from dataclasses import fields

from narrate.jobs.settings import Settings


def settings_table() -> list[dict[str, str]]:
    """One row per setting (variable, default as shown, who reads it, what it does): the README's table."""
    rows = []
    for f in fields(Settings):
        m = f.metadata
        shown = m["shown"] if m["shown"] is not None else f"`{f.default}`"
        rows.append({"env": m["env"], "default": shown, "reads": m["reads"], "doc": m["doc"]})
    return rows


def settings_markdown() -> str:
    """The README's settings table."""
    lines = ["| variable | default | read by | what it does |", "|---|---|---|---|"]
    for row in settings_table():
        lines.append(f"| `{row['env']}` | {row['default']} | {row['reads']} | {row['doc']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(settings_markdown())
