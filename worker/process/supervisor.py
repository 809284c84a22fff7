"""``narrate worker``: a small supervisor (no MLX in it) that runs the worker process, restarts it
when it crashes, and kills it when it hangs.

The worker writes "busy <time> <pid>" to a progress file as synthesis advances and "idle ..."
while it waits for jobs. A busy worker whose progress file does not change for
NARRATE_HANG_TIMEOUT seconds (stuck in native code, where no Python signal handler can run) is
SIGKILLed and restarted; its job is then recovered like any crashed one (retried, or failed after
NARRATE_MAX_ATTEMPTS crashes). SIGTERM/SIGINT are passed on: the worker finishes the batch in
flight, requeues its job and exits 0, and so does the supervisor. Exit code 2 from the worker is a
configuration error: the supervisor exits with it instead of restarting. Exit code 3 is a Redis server
that refuses every write (out of memory, a full disk, too few replicas, a replica): the supervisor
says so once and waits, looking again with a growing delay, until a write is accepted
(worker/process/refusals.py), instead of restarting the worker in a loop.

Sleep: stalls are measured on this process's monotonic clock, from the moment the supervisor last
saw the file change. A machine that sleeps (or a process group that is stopped) makes the
supervisor's own polls stall too; after such a gap the stall window starts again, so a laptop
waking up does not kill its worker as hung. A hang kill soon after a wake counts like an external
kill (a tenth of a crash) for the job's poison-pill tally.

The supervisor also runs the scheduler (narrate.jobs.schedules.loop) in a thread, unless ``--burst``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from narrate.jobs.errors import NarrateError
from narrate.jobs.fanout import fetch
from narrate.jobs.schedules import loop as scheduler
from narrate.jobs.server.localstate import process_command
from narrate.jobs.settings import Settings
from narrate.worker.process.host import host_id, lock_path, open_lock
from narrate.worker.process.refusals import EXIT_NAME, REDIS_REFUSES, probe, wait_for_writes

log = logging.getLogger("narrate.supervisor")
POLL_S = 0.1
WAKE_GAP_S = 2.0  # polls further apart than this: this process (or the machine) was not running
# A stop passed on to a worker process that is still there this long after, and not running a job,
# is passed on once more: a stop signal can be lost in a process that is just starting (one whose
# worker went on to wait for jobs was seen). A job's warm stop is never hurried this way.
RESTOP_S = 10.0
CONFIG_ERROR = 2
PROGRESS_NAME = re.compile(r"worker-(\d+)\.(?:progress|tmp)")  # runtime.beat writes .tmp, renames to .progress


def _progress(path: Path) -> tuple[str, str]:
    """(state, raw line) of the progress file; the raw line changes on every beat."""
    try:
        line = path.read_text()
        return line.split()[0], line
    except (OSError, IndexError):
        return "starting", ""


def prepare_home(settings: Settings) -> None:
    """Configuration the worker cannot run without: a private home and a usable lock path."""
    home = settings.home
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    if home.stat().st_uid == os.getuid() and home.stat().st_mode & 0o077:
        home.chmod(0o700)  # the server's log, config and socket live here
    os.close(open_lock(lock_path(settings)))


def sweep_progress_files(home: Path) -> int:
    """Remove the progress files (and their temp files) of supervisors that are gone: a killed
    supervisor cannot remove its own. A file is kept while its PID runs a narrate supervisor."""
    n = 0
    for path in home.glob("worker-*"):
        m = PROGRESS_NAME.fullmatch(path.name)
        if m is None or int(m.group(1)) == os.getpid() or _is_supervisor(int(m.group(1))):
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            n += 1
    if n:
        log.info("removed %d progress file(s) of supervisors that are gone", n)
    return n


def _is_supervisor(pid: int) -> bool:
    """PID runs `narrate worker` (ps: macOS and Linux); a dead PID, or one reused by another
    program, does not."""
    command = process_command(pid)
    if command is None:
        return False
    words = command.split()
    return "worker" in words and any(w.endswith(("/narrate", "narrate.cli.main")) or w == "narrate" for w in words)


def supervise(settings: Settings, burst: bool, queue_name: str | None, log_level: str) -> int:
    logging.basicConfig(level=log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        prepare_home(settings)
    except (NarrateError, OSError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return CONFIG_ERROR
    sweep_progress_files(settings.home)
    progress = settings.home / f"worker-{os.getpid()}.progress"
    base = [
        sys.executable,
        "-m",
        "narrate.worker.process.main",
        "--log-level",
        log_level,
        "--progress-file",
        str(progress),
    ]
    base += ["--queue", queue_name or settings.queue] + (["--burst"] if burst else [])
    stopped_at: float | None = None  # when the stop signal came (None: no stop yet)
    child: subprocess.Popen | None = None
    signalled: set[int] = set()  # children a stop signal was passed on to

    sched: tuple[threading.Thread, threading.Event] | None = None  # the scheduler thread and its stop, once started
    fetcher: threading.Thread | None = None

    def forward(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopped_at
        first = stopped_at is None
        if first:
            stopped_at = time.monotonic()
        # Only the first signal sets the event: a second one handled inside that set() (it holds the
        # event's lock) would wait for the lock forever, as the worker process did (rq_worker).
        if first and sched is not None:
            sched[1].set()  # no new tick; one in progress stops after its document
        if child is not None and child.poll() is None:
            signalled.add(child.pid)
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)  # from here on a stop is this process's own, not the start-up one's
    signal.signal(signal.SIGINT, forward)
    # The scheduler (due --at/--in jobs, schedule ticks) runs here, in this process without MLX.
    sched = None if burst or stopped_at is not None else scheduler.start_thread(settings, queue_name)
    if sched is not None:  # and `narrate fetch` of the outputs this host wrote (narrate.jobs.fanout.fetch)
        fetcher = fetch.start_thread(settings, host_id(settings.home), sched[1])
        if stopped_at is not None:  # the stop came while the thread started
            sched[1].set()
    backoff = 0.0
    previous_exit = ""
    try:
        while True:
            progress.unlink(missing_ok=True)
            if stopped_at is not None:  # stopped while the last one was exiting or during the back-off
                return 0
            child = subprocess.Popen(base + ["--previous-exit", previous_exit])
            if stopped_at is not None and child.pid not in signalled:  # the signal came before `child` named this one
                signalled.add(child.pid)
                child.send_signal(signal.SIGTERM)
            seen = _watch(child, progress, settings.hang_timeout, lambda: stopped_at)
            if stopped_at is not None and seen.code in (-signal.SIGTERM, -signal.SIGINT):
                return 0  # stopped while it was still starting (before its handlers): nothing ran
            if seen.code == 0 or stopped_at is not None or seen.code == CONFIG_ERROR:
                return seen.code
            if seen.code == REDIS_REFUSES:  # a restart would fail the same way: wait until writes are accepted
                answer = probe(settings) or "a write refused"
                if not wait_for_writes(settings, answer, lambda: stopped_at is not None):
                    return 0
                backoff, previous_exit = 0.0, EXIT_NAME
                continue
            # Restart at once after a crash mid-work (its job is recovered at start-up); back off
            # when the worker dies before doing any work (a crash loop).
            backoff = 0.0 if seen.worked else min(max(backoff * 2, 0.5), 30.0)
            previous_exit = seen.describe()
            log.warning("worker exited with %s; restarting in %.1f s", previous_exit, backoff)
            time.sleep(backoff)
    finally:
        progress.unlink(missing_ok=True)
        if sched is not None:
            sched[1].set()
            sched[0].join(timeout=30)  # a tick in progress stops after its document (the lease is released)
        if fetcher is not None:  # its server connection is let go: the last user shuts the embedded server down
            fetcher.join(timeout=10)


@dataclass
class Watched:
    code: int = 0
    worked: bool = False  # was it ever busy
    hung: bool = False  # killed for making no progress
    after_wake: bool = False  # ... within a hang timeout of a wake

    def describe(self) -> str:
        if self.hung:
            return "hang after wake" if self.after_wake else "hang"
        if self.code < 0:
            return f"signal {signal.Signals(-self.code).name}"
        return f"code {self.code}"


def _watch(
    child: subprocess.Popen, progress: Path, hang_timeout: int, stopped_at: Callable[[], float | None] = lambda: None
) -> Watched:
    """Wait for the child to exit, killing it if it hangs; an idle child still there RESTOP_S after
    the stop (`stopped_at`: when it came, or None) is sent it once more."""
    seen = Watched()
    restopped = False
    last_line, changed_at = None, time.monotonic()
    woke_at = -float("inf")
    polled_at = time.monotonic()
    while True:
        try:
            seen.code = child.wait(timeout=POLL_S)
            return seen
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if now - polled_at > WAKE_GAP_S:  # we were not running: the machine slept or we were stopped
            changed_at = woke_at = now
        polled_at = now
        state, line = _progress(progress)
        if line != last_line:
            last_line, changed_at = line, now
        seen.worked = seen.worked or state == "busy"
        since = stopped_at()
        if since is not None and not restopped and state != "busy" and now - since > RESTOP_S:
            log.warning("worker %d is still running %.0f s after the stop: stopping it again", child.pid, RESTOP_S)
            restopped = True
            child.send_signal(signal.SIGTERM)
        if state == "busy" and now - changed_at > hang_timeout and not seen.hung:
            log.error("worker %d made no progress for %d s: killing it", child.pid, hang_timeout)
            seen.hung = True
            seen.after_wake = now - woke_at <= 2 * hang_timeout
            child.kill()
