"""Faults and what they leave: the output of a fault-free run to compare with, the kill -9 loop
and its figures, and the partial files a fault must not leave behind."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

from helpers.fake import synthesized
from helpers.ops import submit
from helpers.procs import child_pid, narrate, start_worker, stop_worker, wait_for_job


def golden(env, home, voice, text, name="golden.wav") -> bytes:
    """The output of a fault-free run; it leaves no checkpoint in the cache for the run under test."""
    env = dict(env, NARRATE_CACHE_MAX_GB="0")
    doc = home / f"{name}.txt"
    doc.write_text(text)
    out = home / "out" / name
    job_id = submit(env, doc, voice, out)
    proc = narrate(env, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr
    st = wait_for_job(job_id)
    assert st["status"] == "finished", (st, proc.stderr[-3000:])
    (home / "fake.log").unlink(missing_ok=True)
    return out.read_bytes()


def leftovers(home: Path) -> list[str]:
    """Temp and partial files anywhere under `home`."""
    return [str(p) for p in home.rglob("*") if p.name.endswith((".tmp", ".partial.wav")) or ".partial." in p.name]


def partials(*dirs: Path) -> list[str]:
    """What a book writer leaves in an output directory when it does not finish: partial outputs
    and its .narrate-* temp names."""
    return [str(p) for d in dirs for p in d.rglob("*") if ".partial" in p.name or p.name.startswith(".narrate-")]


def kill_loop(
    env: dict, home: Path, r, job_id: str, kills: int, marks: list | None = None, seed: int = 0, max_wait: float = 120
) -> dict:
    """Run a supervised worker and SIGKILL its worker process `kills` times at random moments
    while the job synthesizes; return the figures (the job then runs to completion). `marks`
    gets the fake-engine log length at each kill. Latency: kill -> a new worker process
    synthesizes the job's next batch (restart, imports, model load and recovery included)."""
    rng = random.Random(seed)
    supervisor = start_worker(env)
    latencies = []
    try:
        for _ in range(kills):
            deadline = time.monotonic() + max_wait
            while True:  # wait until the worker is busy, then a random moment more
                info = child_pid(home, supervisor)
                if info and info[0] == "busy":
                    break
                assert time.monotonic() < deadline, "worker never got busy"
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 1.0))
            info = child_pid(home, supervisor)
            if _finished(r, job_id):
                break
            os.kill(info[1], signal.SIGKILL)
            if marks is not None:
                marks.append(len(synthesized(home)))
            t_kill = time.monotonic()
            while True:  # resumed: a new worker process is synthesizing the job's next batch
                now = child_pid(home, supervisor)
                if now and now[0] == "busy" and now[1] != info[1]:
                    break
                assert time.monotonic() - t_kill < max_wait, "job was not resumed"
                time.sleep(0.01)
            latencies.append(time.monotonic() - t_kill)
        st = _wait_finished(r, job_id, max_wait)
    finally:
        log = stop_worker(supervisor)
    lines = synthesized(home)
    return {"status": st, "latencies": latencies, "synthesized": len(lines), "log": log}


def _finished(r, job_id: str) -> bool:
    from narrate.jobs.api import submit as api

    return api.status(r, job_id)["status"] == "finished"


def _wait_finished(r, job_id: str, timeout: float) -> str:
    try:
        return wait_for_job(job_id, timeout=timeout, states=("finished", "failed"))["status"]
    except AssertionError:
        return "timeout"


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]
