"""Shared fixtures: a tiny random-weight Qwen3-TTS checkpoint built by the tests in the real
on-disk layout, a synthetic voice, isolated narrate homes, the embedded server and the
external Redis (NARRATE_TEST_REDIS_URL, default redis://127.0.0.1:6379/9, flushed)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

import numpy as np
import pytest
import redis

SR = 24_000


def _external_redis_url() -> str:
    """The external server's DB for this test process: NARRATE_TEST_REDIS_URL (default DB 9), and
    with pytest-xdist the next DBs for the other workers (gw1 takes DB 10, ...), each flushed alone."""
    url = os.environ.get("NARRATE_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    base, _, db = url.rpartition("/")
    return f"{base}/{int(db) + int(worker.removeprefix('gw'))}" if db.isdigit() else url


EXTERNAL_REDIS_URL = _external_redis_url()


def write_voice(path: Path, seconds: float = 3.0, amplitude: float = 0.3) -> Path:
    """A voiced, harmonic signal with a wobbling pitch: enough for the speaker encoder."""
    t = np.arange(int(SR * seconds)) / SR
    f0 = 120 + 15 * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / SR
    sig = sum(np.sin(k * phase) / k for k in range(1, 20))
    sig *= 0.5 + 0.5 * np.sin(2 * np.pi * 2.5 * t) ** 2
    sig = amplitude * sig / max(np.abs(sig).max(), 1e-9) if amplitude else np.zeros_like(t)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes((sig * 32767).astype("<i2").tobytes())
    return path


@pytest.fixture(scope="session")
def session_dir():
    d = Path(tempfile.mkdtemp(prefix="nrt-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def checkpoint(session_dir) -> Path:
    from narrate.worker.testkit.random_checkpoint import write_checkpoint

    return write_checkpoint(session_dir / "tiny-ckpt", size="tiny", dtype="bfloat16", seed=0)


@pytest.fixture(scope="session")
def voice_wav(session_dir) -> Path:
    return write_voice(session_dir / "voice.wav")


@pytest.fixture
def home():
    """A short-path NARRATE_HOME (unix socket paths are limited to 107 bytes)."""
    d = Path(tempfile.mkdtemp(prefix="nh-", dir="/tmp"))
    yield d
    from narrate.jobs.server.embedded import EmbeddedServer

    pid = EmbeddedServer(d).server_pid()  # only a PID proven to be this home's server
    if pid:  # never leave a test's embedded server behind
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def env(home, checkpoint, monkeypatch) -> dict[str, str]:
    """Environment for narrate processes (and this one): embedded server, tiny model."""
    values = {
        "NARRATE_HOME": str(home),
        "NARRATE_OUTPUT_DIR": str(home / "out"),
        "NARRATE_LOCK_PATH": str(home / "host.lock"),
        "NARRATE_MODEL": str(checkpoint),
        "NARRATE_MAX_FRAMES": "6",
    }
    monkeypatch.delenv("NARRATE_REDIS_URL", raising=False)
    monkeypatch.delenv("NARRATE_QUANT", raising=False)
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    (home / "out").mkdir()
    full = dict(os.environ)
    full["PYTHONUNBUFFERED"] = "1"
    return full


@pytest.fixture
def external_redis(env, monkeypatch):
    """The external-server path: a real Redis at NARRATE_TEST_REDIS_URL, its DB flushed around the test."""
    client = redis.Redis.from_url(EXTERNAL_REDIS_URL)
    client.ping()
    client.flushdb()
    monkeypatch.setenv("NARRATE_REDIS_URL", EXTERNAL_REDIS_URL)
    env["NARRATE_REDIS_URL"] = EXTERNAL_REDIS_URL
    yield client
    client.flushdb()
    client.close()


def narrate(env: dict, *args: str, timeout: float = 300, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "narrate.cli.main", *args],
        env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd,
    )  # fmt: skip


def start_worker(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "narrate.cli.main", "worker", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def stop_worker(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 60) -> str:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


ENDED = ("finished", "failed", "canceled", "stopped")


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


def decoded_samples(path: Path) -> np.ndarray:
    """Decode any output file to 24 kHz mono int16 with ffmpeg (independent of narrate's code)."""
    import imageio_ffmpeg

    proc = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(path), "-f", "s16le", "-ac", "1",
         "-ar", str(SR), "pipe:1"],
        capture_output=True, check=True,
    )  # fmt: skip
    return np.frombuffer(proc.stdout, dtype="<i2")


def exited(pid: int) -> bool:
    """The process is gone, or a zombie its parent has not reaped yet."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    proc = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
    return proc.returncode != 0 or proc.stdout.strip().startswith("Z")
