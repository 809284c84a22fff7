"""`narrate ARGS` in this process, through click's CliRunner: parsing, output and refusals that
need no process of their own (kills, signals, workers and outages: helpers.procs.narrate).

The result has a process's returncode, stdout and stderr (click 8.2+ keeps stderr apart). The
environment the command sees is `env` (os.environ is patched for the call and restored), and
`cwd` its current directory for the call; an exception other than the command's exit (a
traceback, in a process of its own) is raised here."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

# Variables the command may read that `env` can leave out: unset for the call when it does.
UNSET_WHEN_ABSENT = ("NARRATE_", "HF_")


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def invoke(env: dict, *args: str, cwd: Path | None = None, timeout: float | None = None) -> Ran:
    """`narrate ARGS` run by `narrate.cli.main:main` in this process (`timeout`: ignored, for the
    same signature as helpers.procs.narrate)."""
    from narrate.cli.main import main

    changes: dict[str, str | None] = {k: v for k, v in env.items() if os.environ.get(k) != v}
    changes |= {k: None for k in os.environ if k.startswith(UNSET_WHEN_ABSENT) and k not in env}
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        result = CliRunner().invoke(main, list(args), env=changes, prog_name="narrate")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception.with_traceback(result.exc_info[2] if result.exc_info else None)
    return Ran(result.exit_code, result.stdout, result.stderr)
