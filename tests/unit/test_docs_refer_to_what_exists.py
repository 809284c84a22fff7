"""The README and docs/ name files and commands that exist: every path under jobs/, worker/, cli/, tests/, docs/ or
.ci/ they mention is in the checkout, and every `narrate COMMAND [SUBCOMMAND]` they show (a line of a code block,
or a code span, that starts with it) is a command of the CLI. A rename that leaves a doc behind fails here. The README
stays under 20 KB, and docs/ under 150 KB."""

from __future__ import annotations

import re
from pathlib import Path

import click
from narrate.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "tests" / "bench" / "results.md"]
PATH = re.compile(r"((?:jobs|worker|cli|tests|docs|\.ci)/[\w./-]*[\w-]\.(?:py|md|toml|html|js|css|json|sh))")
SHOWN = re.compile(r"^\s*(?:\$ )?narrate ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")


def _code(text: str) -> list[str]:
    """The lines of fenced code blocks and the code spans of `text`."""
    blocks = [line for block in re.findall(r"```[^\n]*\n(.*?)```", text, re.S) for line in block.splitlines()]
    return blocks + re.findall(r"`([^`\n]+)`", text)


def test_every_path_the_docs_name_exists():
    missing = {(doc.name, path) for doc in DOCS for path in PATH.findall(doc.read_text()) if not (ROOT / path).exists()}
    assert not missing, sorted(missing)


def test_every_command_the_docs_show_exists():
    unknown = set()
    for doc in DOCS:
        for line in _code(doc.read_text()):
            m = SHOWN.match(line)
            if m is None:
                continue
            command = main.commands.get(m.group(1))
            if command is None:
                unknown.add((doc.name, m.group(1)))
            elif m.group(2) and isinstance(command, click.Group) and m.group(2) not in command.commands:
                unknown.add((doc.name, f"{m.group(1)} {m.group(2)}"))
    assert not unknown, sorted(unknown)


def test_the_readme_is_short():
    """The README leads to docs/ rather than holding them: under 20 KB."""
    size = len((ROOT / "README.md").read_bytes())
    assert size < 20_000, f"README.md is {size} bytes"


def _anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown text."""
    headings = re.findall(r"^#{1,6} (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_link_to_a_section_finds_its_heading():
    """A `page.md#section` link (README, docs/, the code's comments and messages) names a heading of that page, and
    a `(#section)` link of a page one of its own."""
    pages = {doc.name: doc for doc in DOCS}
    sources = [*DOCS, *sorted(p for d in ("jobs", "cli", "worker") for p in (ROOT / d).rglob("*") if p.is_file())]
    broken = set()
    for source in sources:
        if source.suffix not in (".md", ".py", ".html", ".js"):
            continue
        for page, anchor in re.findall(r"([\w-]+\.md)#([\w-]+)", source.read_text(errors="replace")):
            target = pages.get(page)
            if target is None and page != source.name:
                continue  # a page outside docs/ (another project's)
            if anchor not in _anchors((target or source).read_text()):
                broken.add((source.name, f"{page}#{anchor}"))
        if source.suffix == ".md":  # a link within the page
            own = _anchors(source.read_text())
            broken |= {
                (source.name, f"#{a}") for a in re.findall(r"\]\(#([\w-]+)\)", source.read_text()) if a not in own
            }
    assert not broken, sorted(broken)


def test_the_docs_are_a_few_screens_each():
    """docs/ says what a user needs, not every detail the code and the tests hold: under 150 KB of Markdown in
    all (dated benchmark figures live in tests/bench/results.md)."""
    size = sum(len(p.read_bytes()) for p in (ROOT / "docs").glob("*.md"))
    assert size < 150_000, f"docs/*.md is {size} bytes"
