"""Helpers for the schedule tests: a fast scheduler environment, schedules made due, scheduler
processes, and running a command without root's power to read any file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import narrate, wait_until
from faults import book, fake_env

INTERVAL_S = 0.2  # the tests' scheduler interval (the lease is 5 of these)


def sched_env(env: dict, home: Path, settle_s: float = 0, **extra: str) -> dict:
    return fake_env(
        env, home, delay_ms=0, NARRATE_SCHEDULER_INTERVAL_S=str(INTERVAL_S), NARRATE_SCHEDULE_SETTLE_S=str(settle_s),
        **extra,
    )  # fmt: skip


def unprivileged(args: list[str]) -> list[str]:
    """`args` run without root's right to read any file (Linux: dropped from the capability bounding
    set), so a file with mode 000 is unreadable to it as to anyone else."""
    if os.geteuid() == 0:
        assert shutil.which("setpriv"), "running as root needs setpriv (util-linux) to drop DAC override"
        return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--", *args]
    return args


def cli(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`narrate ARGS`, unprivileged."""
    cmd = unprivileged([sys.executable, "-m", "narrate.cli.main", *args])
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def write_docs(folder: Path, n: int, prefix: str = "doc", sentences: int = 2) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        p = folder / f"{prefix}{i:04d}.txt"
        p.write_text(book(sentences, f"{prefix} {i}"))
        paths.append(p)
    return paths


def add(env: dict, name: str, watch: Path, voice: Path, *extra: str) -> None:
    proc = narrate(env, "schedule", "add", name, "--cron", "0 2 * * *", "--watch", str(watch), "--voice", str(voice),
                   *extra)  # fmt: skip
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


def listing(env: dict) -> dict:
    proc = narrate(env, "schedule", "list", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def run_tick(env: dict, name: str) -> dict:
    proc = cli(env, "schedule", "run", name, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def start_scheduler(env: dict) -> subprocess.Popen:
    cmd = unprivileged([sys.executable, "-m", "narrate.cli.main", "scheduler"])
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_runs(r, name: str, runs: int, timeout: float = 60) -> dict:
    return wait_until(lambda: state(r, name) if state(r, name).get("runs", 0) >= runs else None, timeout,
                      f"{runs} run(s) of schedule {name}")  # fmt: skip
