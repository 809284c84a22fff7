"""The `narrate` command line: click commands only (parse, call narrate.jobs, print)."""

from __future__ import annotations

import signal
import sys

if sys.argv[1:2] in (["worker"], ["scheduler"]) and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
    # A service manager's stop that comes while the service is still starting (importing) is a
    # clean stop, not a death by signal: nothing ran yet. The service sets its own handler when ready.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

import click  # noqa: E402

from .cache import cache_group  # noqa: E402
from .chapters import chapters  # noqa: E402
from .queue import fetch, resume, status  # noqa: E402
from .queue_ops import cancel, info, list_jobs, watch  # noqa: E402
from .schedule import schedule, scheduler  # noqa: E402
from .services import bench, dashboard, worker  # noqa: E402
from .submitting import run, submit  # noqa: E402


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
