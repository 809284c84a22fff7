"""`narrate serve` for the tests: a server process on a free port of its own home (embedded Valkey,
tiny checkpoint), a worker beside it when a test needs one, plain HTTP calls, and a receiver that
records the callbacks it gets."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import requests

from helpers.procs import NARRATE, start_worker, stop_worker, wait_until
from helpers.servers import free_port


def serve_env(checkpoint: Path, **extra: str) -> tuple[dict[str, str], Path]:
    """The environment of a server (and its worker): a home of its own, the embedded server, the tiny model."""
    home = Path(tempfile.mkdtemp(prefix="nw-", dir="/tmp"))  # short: unix socket paths are limited
    (home / "out").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NARRATE_")}
    env.update(
        NARRATE_HOME=str(home),
        NARRATE_OUTPUT_DIR=str(home / "out"),
        NARRATE_LOCK_PATH=str(home / "host.lock"),
        NARRATE_MODEL=str(checkpoint),
        NARRATE_MAX_FRAMES="6",
        PYTHONUNBUFFERED="1",
        HF_HUB_OFFLINE="1",
        NARRATE_SERVE_SUBMITS_PER_MIN="100000",
    )
    # Offline: a published model id fails in the worker instead of downloading; the submissions
    # limit is tested by tests/system/test_serve_attacks.py, which sets its own.
    env.update(extra)
    return env, home


def start_serve(env: dict[str, str], port: int, *args: str) -> subprocess.Popen:
    """`narrate serve`, its output into a file (a pipe nobody reads while it runs fills up with the
    request log of a long test and blocks the server): `output(proc)` reads it."""
    log = tempfile.NamedTemporaryFile(prefix="narrate-serve-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen(
        [*NARRATE, "serve", "--port", str(port), *args], env=env, stdout=log, stderr=subprocess.STDOUT, text=True
    )
    log.close()
    proc.log_path = Path(log.name)  # type: ignore[attr-defined]
    return proc


def output(proc: subprocess.Popen) -> str:
    """What a process from `start_serve` printed (its log file, removed once the process ended)."""
    path: Path = proc.log_path  # type: ignore[attr-defined]
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
    if proc.poll() is not None:
        path.unlink(missing_ok=True)
    return text


def wait_serving(proc: subprocess.Popen, url: str, headers: dict | None = None, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"narrate serve exited {proc.returncode}: {output(proc)}")
        with contextlib.suppress(requests.RequestException):
            if requests.get(f"{url}/v1/models", headers=headers, timeout=2).status_code in (200, 401):
                return
        time.sleep(0.1)
    raise AssertionError(f"narrate serve did not answer at {url} within {timeout} s")


def stop(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return output(proc)


def remove_home(home: Path) -> None:
    from narrate.jobs.server.embedded import EmbeddedServer

    pid = EmbeddedServer(home).server_pid()  # only a PID proven to be this home's server
    if pid:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(home, ignore_errors=True)


@dataclass
class Served:
    url: str
    env: dict[str, str]
    home: Path
    proc: subprocess.Popen
    worker: subprocess.Popen | None = None
    hooks: list[dict] = field(default_factory=list)

    def get(self, path: str, **kw: object) -> requests.Response:
        return requests.get(self.url + path, timeout=120, **kw)  # type: ignore[arg-type]

    def post(self, path: str, **kw: object) -> requests.Response:
        return requests.post(self.url + path, timeout=120, **kw)  # type: ignore[arg-type]

    def delete(self, path: str, **kw: object) -> requests.Response:
        return requests.delete(self.url + path, timeout=120, **kw)  # type: ignore[arg-type]

    def with_worker(self) -> Served:
        """Start a worker and wait until it takes jobs (registered on the server)."""
        if self.worker is None:
            self.worker = start_worker(self.env)
            wait_until(self._worker_registered, 120, "the worker to register")
        return self

    def _worker_registered(self) -> bool:
        from narrate.jobs.server.connection import Connection
        from narrate.jobs.settings import Settings
        from rq import Worker

        assert self.worker is not None and self.worker.poll() is None, "the worker exited"
        with Connection(Settings(home=self.home)) as conn:
            return bool(Worker.all(connection=conn.redis))

    def close(self) -> str:
        logs = stop(self.proc)
        if self.worker is not None:
            logs += stop_worker(self.worker)
        remove_home(self.home)
        return logs


def add_voice(s: Served, sample: Path, name: str = "alice") -> None:
    """Save `sample` as the voice `name` through the API."""
    with open(sample, "rb") as f:
        assert s.post("/v1/audio/voices", files={"audio_sample": f}, data={"name": name, "consent": "1"}).ok


def post_book(s: Served, sentences: int, voice: str = "alice") -> dict:
    """Submit a book of `sentences` one-sentence paragraphs as a WAV narration; the narration as answered."""
    text = "\n\n".join(f"Paragraph {i} of the book is read here, slowly and well." for i in range(sentences))
    return s.post("/v1/narrations", data={"voice": voice, "text": text, "format": "wav"}).json()


def serve(checkpoint: Path, **extra: str) -> Served:
    env, home = serve_env(checkpoint, **extra)
    port = free_port()
    proc = start_serve(env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(proc, url)
    except AssertionError:
        remove_home(home)
        raise
    return Served(url, env, home, proc)


def served_with_worker(checkpoint: Path, **extra: str) -> Iterator[Served]:
    """A server with a worker, for a module's fixture (``yield from``); its log must hold no traceback."""
    s = serve(checkpoint, **extra).with_worker()
    yield s
    logs = s.close()
    assert "Traceback" not in logs, logs[-4000:]


class Hooks:
    """An HTTP server on a free loopback port that records each POST's JSON body (callbacks)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.received: list[dict] = []
        received = self.received

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                n = int(self.headers.get("Content-Length", 0))
                received.append(json.loads(self.rfile.read(n)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
