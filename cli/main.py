"""The `narrate` command line: click commands only (parse, call narrate.jobs, print)."""

from __future__ import annotations

import click

from .cache import cache_group
from .chapters import chapters
from .queue import fetch, resume, status
from .queue_ops import cancel, info, list_jobs, watch
from .schedule import schedule, scheduler
from .services import bench, dashboard, worker
from .submitting import run, submit


@click.group()
@click.version_option(package_name="narrate")
def main() -> None:
    """Queue-native batch narration: documents and a voice sample in, audiobook files out."""


COMMANDS = (
    submit, run, chapters, status, list_jobs, watch, cancel, resume, info, fetch,  # jobs
    schedule, scheduler,  # recurring batches
    worker, dashboard, bench,  # services and tools
    cache_group,  # the sentence cache
)  # fmt: skip
for command in COMMANDS:
    main.add_command(command)


if __name__ == "__main__":
    main()
