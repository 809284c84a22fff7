"""Schedules: a fast scheduler environment, schedules added, made due, listed and ticked, their
state in Redis, and scheduler processes. `run=`: how a command is run (helpers.procs.narrate, or
helpers.cli.invoke in this process)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from helpers.fake import fake_env
from helpers.procs import NARRATE, narrate, unprivileged, wait_until

INTERVAL_S = 0.2  # the tests' scheduler interval (the lease is 5 of these)


def sched_env(env: dict, home: Path, settle_s: float = 0, **extra: str) -> dict:
    return fake_env(
        env,
        home,
        delay_ms=0,
        NARRATE_SCHEDULER_INTERVAL_S=str(INTERVAL_S),
        NARRATE_SCHEDULE_SETTLE_S=str(settle_s),
        **extra,
    )


def add(env: dict, name: str, watch: Path, voice: Path, *extra: str, run=narrate) -> None:
    proc = run(
        env, "schedule", "add", name, "--cron", "0 2 * * *", "--watch", str(watch), "--voice", str(voice), *extra
    )
    assert proc.returncode == 0, proc.stderr


def state(r, name: str) -> dict:
    raw = r.get(f"narrate:schedule:{name}:state")
    return json.loads(raw) if raw else {}


def make_due(r, name: str, days: float = 2.0) -> float:
    """Pretend the last tick ran `days` ago (ticks were missed since); returns that time."""
    st = state(r, name)
    st["last_tick"] = time.time() - days * 86400
    r.set(f"narrate:schedule:{name}:state", json.dumps(st))
    return st["last_tick"]


def docs(r, name: str) -> dict[str, dict]:
    return {k.decode(): json.loads(v) for k, v in r.hgetall(f"narrate:schedule:{name}:docs").items()}


def skipped(r, name: str) -> dict[str, dict]:
    return {k.decode(): json.loads(v) for k, v in r.hgetall(f"narrate:schedule:{name}:skipped").items()}


def queued(r, queue: str = "narrate") -> list[str]:
    return [j.decode() for j in r.lrange(f"rq:queue:{queue}", 0, -1)]


def listing(env: dict, run=narrate) -> dict:
    proc = run(env, "schedule", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def run_tick(env: dict, name: str, run=None) -> dict:
    """`narrate schedule run NAME --json`, by default unprivileged (a file of mode 000 is unreadable
    to it, as to the scheduler of a user who is not root)."""
    proc = (
        run(env, "schedule", "run", name, "--json")
        if run
        else narrate(env, "schedule", "run", name, "--json", timeout=120, as_user=True)
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def start_scheduler(env: dict) -> subprocess.Popen:
    cmd = unprivileged([*NARRATE, "scheduler"])
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_runs(r, name: str, runs: int, timeout: float = 60) -> dict:
    return wait_until(
        lambda: state(r, name) if state(r, name).get("runs", 0) >= runs else None,
        timeout,
        f"{runs} run(s) of schedule {name}",
    )
