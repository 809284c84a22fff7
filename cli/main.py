"""The `narrate` command line: click commands only (parse, call narrate.jobs, print)."""

from __future__ import annotations

import os
import signal
import sys


def _leave_while_starting() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, RuntimeError, ValueError):  # a reentrant flush inside a write: nothing is lost by skipping
            pass
    os._exit(0)


if sys.argv[1:2] in (["worker"], ["scheduler"]) and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
    # A service manager's stop that comes while the service is still starting (importing) is a
    # clean stop, not a death by signal: nothing ran yet. The service sets its own handler when ready.
    # os._exit, not sys.exit: a SystemExit raised while the import machinery runs a callback of its
    # own is printed and ignored ("Exception ignored in: _get_module_lock.<locals>.cb"), and the
    # process went on starting and never stopped.
    signal.signal(signal.SIGTERM, lambda *_: _leave_while_starting())


import click  # noqa: E402
from narrate.cli.cache import cache_group  # noqa: E402
from narrate.cli.cast import cast  # noqa: E402
from narrate.cli.chapters import chapters  # noqa: E402
from narrate.cli.export import export  # noqa: E402
from narrate.cli.feed import feed_group  # noqa: E402
from narrate.cli.jobs import cancel, fetch, info, list_jobs, resume, status, watch  # noqa: E402
from narrate.cli.proof import proof  # noqa: E402
from narrate.cli.redo import redo  # noqa: E402
from narrate.cli.schedule import schedule, scheduler  # noqa: E402
from narrate.cli.serve import serve  # noqa: E402
from narrate.cli.services import bench, dashboard, worker  # noqa: E402
from narrate.cli.submit import run, submit  # noqa: E402
from narrate.cli.voice import voice_group  # noqa: E402


@click.group()
@click.version_option(package_name="narrate")
def main() -> None:
    """Queue-native batch narration: documents and a voice sample in, audiobook files out."""


COMMANDS = (
    submit,
    run,
    chapters,
    cast,
    status,
    proof,
    redo,
    list_jobs,
    watch,
    cancel,
    resume,
    info,
    fetch,
    export,  # jobs
    voice_group,  # voices by name
    schedule,
    scheduler,  # recurring batches
    feed_group,  # podcast feeds
    worker,
    dashboard,
    serve,
    bench,  # services and tools
    cache_group,  # the sentence cache
)
for command in COMMANDS:
    main.add_command(command)


if __name__ == "__main__":
    main()
