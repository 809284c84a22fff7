"""narrate in processes of its own: a command (`narrate ARGS`), a worker to start and stop, the
worker process a supervisor runs; waiting for a condition, for a job, for a process to exit."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

NARRATE = [sys.executable, "-m", "narrate.cli.main"]


def unprivileged(args: list[str]) -> list[str]:
    """`args` run without root's right to read any file (Linux: dropped from the capability bounding
    set), so a file with mode 000 is unreadable to it as to anyone else."""
    if os.geteuid() == 0:
        assert shutil.which("setpriv"), "running as root needs setpriv (util-linux) to drop DAC override"
        return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--", *args]
    return args


def file_size_limit(limit: int) -> Callable[[], None]:
    """A preexec_fn setting RLIMIT_FSIZE to `limit` bytes: a stand-in for a full disk (a write past
    it fails with EFBIG instead of killing the process)."""
    import resource

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limited


def narrate(
    env: dict,
    *args: str,
    timeout: float = 300,
    cwd: Path | None = None,
    as_user: bool = False,
    file_limit: int | None = None,
) -> subprocess.CompletedProcess:
    """`narrate ARGS` in a process of its own. `as_user`: without root's power to read any file
    (see unprivileged); `file_limit`: with RLIMIT_FSIZE at that many bytes."""
    cmd = unprivileged(NARRATE + list(args)) if as_user else NARRATE + list(args)
    return subprocess.run(
        cmd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        preexec_fn=file_size_limit(file_limit) if file_limit is not None else None,
    )


def burst_worker_with_file_limit(env: dict, limit: int) -> subprocess.CompletedProcess:
    """`narrate worker --burst` with RLIMIT_FSIZE at `limit` bytes (a full disk)."""
    return narrate(env, "worker", "--burst", "--quiet", timeout=120, file_limit=limit)


def start_worker(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*NARRATE, "worker", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def stop_worker(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 60) -> str:
    """Stop a process started with a pipe for its output (a worker, a scheduler); its output."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


def child_pid(home: Path, supervisor: subprocess.Popen) -> tuple[str, int] | None:
    """(state, pid) of the worker process a supervisor runs, from its progress file."""
    try:
        state, _stamp, pid = (home / f"worker-{supervisor.pid}.progress").read_text().split()
        return state, int(pid)
    except (OSError, ValueError):
        return None


def exited(pid: int) -> bool:
    """The process is gone, or a zombie its parent has not reaped yet."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    proc = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
    return proc.returncode != 0 or proc.stdout.strip().startswith("Z")


def wait_until(cond, timeout: float = 30.0, what: str = "condition", poll: float = 0.05):
    """Poll `cond` until it returns something truthy (returned), or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(poll)


ENDED = ("finished", "failed", "canceled", "stopped")


def wait_for_job(job_id: str, settings=None, timeout: float = 300, states=ENDED) -> dict:
    """The job's status once it is in one of `states` (by default: ended)."""
    from narrate.jobs.api import submit as api
    from narrate.jobs.server.connection import Connection
    from narrate.jobs.settings import Settings

    seen: dict = {}
    with Connection(settings or Settings.from_env()) as conn:

        def reached():
            seen.update(api.status(conn.redis, job_id))
            return dict(seen) if seen["status"] in states else None

        try:
            return wait_until(reached, timeout, f"job {job_id} to be {'/'.join(states)}", poll=0.1)
        except AssertionError as e:
            raise AssertionError(f"{e}; it is {seen.get('status')}: {seen}") from None


def wait_for_job_state(job_id: str, state: str, timeout: float = 10) -> dict:
    return wait_for_job(job_id, timeout=timeout, states=(state,))
