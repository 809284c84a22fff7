"""Helpers for the fault tests: a book of distinct sentences, the fake-engine environment, the
worker's child process, a private Redis server we can kill, and the kill -9 loop."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from conftest import narrate, start_worker, stop_worker, wait_for_job, wait_until
from narrate.jobs.server.embedded import valkey_binary

WORDS = "amber birch cedar delta ember fjord glade harbor inlet juniper kestrel lantern meadow".split()


def book(n: int, marker: str = "") -> str:
    """A book of n distinct sentences in paragraphs of five; `marker` is put into sentence 7."""
    sentences = []
    for i in range(n):
        words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(3 + i % 5))
        prefix = f"{marker} " if marker and i == 7 else ""
        sentences.append(f"{prefix}Sentence number {i} speaks of {words}.")
    return "\n\n".join(" ".join(sentences[p : p + 5]) for p in range(0, n, 5))


def fake_env(env: dict, home: Path, delay_ms: int = 20, **extra: str) -> dict:
    e = dict(env)
    e.update(
        NARRATE_ENGINE="fake",
        NARRATE_FAKE_DELAY_MS=str(delay_ms),
        NARRATE_FAKE_LOG=str(home / "fake.log"),
        NARRATE_BATCH_SIZE="4",
        NARRATE_HANG_TIMEOUT="600",
    )
    e.update(extra)
    return e


def synthesized(home: Path) -> list[tuple[int, int]]:
    """(sentence index, pid) for every sentence the fake engine synthesized."""
    log = home / "fake.log"
    if not log.exists():
        return []
    return [tuple(map(int, line.split())) for line in log.read_text().split("\n") if line]


def submit(env: dict, doc: Path, voice: Path, out: Path, *extra: str) -> str:
    proc = narrate(env, "submit", str(doc), "--voice", str(voice), "-o", str(out), "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["id"]


def submit_book(env: dict, home: Path, voice: Path, text: str, name: str = "book") -> str:
    doc = home / f"{name}.txt"
    doc.write_text(text)
    return submit(env, doc, voice, home / "out" / f"{name}.wav")


def wait_synthesized(home: Path, n: int, timeout: float = 60) -> None:
    wait_until(lambda: len(synthesized(home)) >= n, timeout, f"{n} sentences synthesized", poll=0.02)


def child_pid(home: Path, supervisor: subprocess.Popen) -> tuple[str, int] | None:
    """(state, pid) of the worker process a supervisor runs, from its progress file."""
    try:
        state, _stamp, pid = (home / f"worker-{supervisor.pid}.progress").read_text().split()
        return state, int(pid)
    except (OSError, ValueError):
        return None


def job_meta(r, job_id: str) -> dict:
    from rq.job import Job
    from rq.serializers import JSONSerializer

    return Job.fetch(job_id, connection=r, serializer=JSONSerializer).get_meta(refresh=True)


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


class PrivateRedis:
    """A Valkey server on a free TCP port with a password and AOF, that a test can kill and restart."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="pr-", dir="/tmp"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.password = "s3cret-" + os.urandom(4).hex()
        self.url = f"redis://:{self.password}@127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [valkey_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--requirepass", self.password],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        import redis

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if redis.Redis.from_url(self.url).ping():
                    return
            except redis.RedisError:
                time.sleep(0.05)
        raise RuntimeError("private redis did not start")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def client(self):
        import redis

        return redis.Redis.from_url(self.url)


def leftovers(home) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.name.endswith((".tmp", ".partial.wav")) or ".partial." in p.name]


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


def wait_for_job_state(job_id, state, timeout=10):
    return wait_for_job(job_id, timeout=timeout, states=(state,))


def burst_worker_with_file_limit(env: dict, limit: int) -> subprocess.CompletedProcess:
    """`narrate worker --burst` with RLIMIT_FSIZE at `limit` bytes: a stand-in for a full disk
    (a write past it fails with EFBIG instead of killing the process)."""
    import resource
    import sys

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "narrate.cli.main", "worker", "--burst", "--quiet"],
        env=env, capture_output=True, text=True, preexec_fn=limited, timeout=120,
    )  # fmt: skip
