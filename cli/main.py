"""The `narrate` command line: click commands only (parse, call narrate.jobs, print)."""

from __future__ import annotations

import click

from .queue import resume, status
from .queue_ops import cancel, info, list_jobs, watch
from .services import bench, dashboard, worker
from .submitting import run, submit


@click.group()
@click.version_option(package_name="narrate")
def main() -> None:
    """Queue-native batch narration: documents and a voice sample in, audiobook files out."""


for command in (submit, run, status, resume, worker, dashboard, bench):
    main.add_command(command)
for command in (list_jobs, cancel, watch, info):  # running the queue day to day
    main.add_command(command)


if __name__ == "__main__":
    main()
