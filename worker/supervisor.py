"""``narrate worker``: a small supervisor (no MLX in it) that runs the worker process, restarts
it when it crashes, and kills it when it hangs.

The worker writes "busy <time>" to a progress file as synthesis advances and "idle <time>"
while it waits for jobs. A busy worker that makes no progress for NARRATE_HANG_TIMEOUT
seconds (stuck in native code, where no Python signal handler can run) is SIGKILLed and
restarted; its job is then recovered like any crashed one (retried, or failed after
NARRATE_MAX_ATTEMPTS crashes). SIGTERM/SIGINT are passed on: the worker finishes the batch in
flight, requeues its job and exits 0, and so does the supervisor.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from narrate.jobs.settings import Settings

log = logging.getLogger("narrate.supervisor")
POLL_S = 0.1


def _progress(path: Path) -> tuple[str, float]:
    try:
        state, stamp, _pid = path.read_text().split()
        return state, float(stamp)
    except (OSError, ValueError):
        return "starting", time.time()


def supervise(settings: Settings, burst: bool, queue_name: str | None, log_level: str) -> int:
    logging.basicConfig(level=log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    settings.home.mkdir(parents=True, exist_ok=True, mode=0o700)
    progress = settings.home / f"worker-{os.getpid()}.progress"
    cmd = [sys.executable, "-m", "narrate.worker.process", "--log-level", log_level]
    cmd += ["--queue", queue_name or settings.queue] + (["--burst"] if burst else [])
    env = dict(os.environ, NARRATE_PROGRESS_FILE=str(progress))
    stopping = False
    child: subprocess.Popen | None = None

    def forward(signum, _frame):
        nonlocal stopping
        stopping = True
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    backoff = 0.0
    try:
        while True:
            progress.unlink(missing_ok=True)
            child = subprocess.Popen(cmd, env=env)
            code, worked, hung = _watch(child, progress, settings.hang_timeout)
            if code == 0 or stopping:
                return code
            if code == 2:  # a configuration error: restarting will not help
                return code
            # Restart at once after a crash mid-work (its job is recovered at start-up); back off
            # when the worker dies before doing any work (a crash loop).
            backoff = 0.0 if worked else min(max(backoff * 2, 0.5), 30.0)
            env["NARRATE_PREVIOUS_EXIT"] = "hang" if hung else _describe(code)  # for its job's crash count
            log.warning("worker exited with %s; restarting in %.1f s", env["NARRATE_PREVIOUS_EXIT"], backoff)
            time.sleep(backoff)
    finally:
        progress.unlink(missing_ok=True)


def _watch(child: subprocess.Popen, progress: Path, hang_timeout: int) -> tuple[int, bool, bool]:
    """Wait for the child to exit, killing it if it hangs.
    Returns (exit code, was it ever busy, was it killed for hanging)."""
    worked = hung = False
    while True:
        try:
            return child.wait(timeout=POLL_S), worked, hung
        except subprocess.TimeoutExpired:
            pass
        state, stamp = _progress(progress)
        worked = worked or state == "busy"
        if state == "busy" and time.time() - stamp > hang_timeout:
            log.error("worker %d made no progress for %d s: killing it", child.pid, hang_timeout)
            hung = True
            child.kill()


def _describe(code: int) -> str:
    if code < 0:
        return f"signal {signal.Signals(-code).name}"
    return f"code {code}"
