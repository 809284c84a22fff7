"""A headless Chromium driven over the DevTools protocol (`--remote-debugging-pipe`: JSON
messages ending in NUL on file descriptors 3 and 4), with the standard library only."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

CANDIDATES = (
    "chromium",
    "chromium-browser",
    "google-chrome",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
)


SKIP_REASON = (
    "no Chromium/Chrome installed (.ci/run installs Debian's chromium with apt-get when it runs as root; "
    "NARRATE_TEST_CHROMIUM names another browser)"
)


def find_chromium() -> str | None:
    for name in [os.environ.get("NARRATE_TEST_CHROMIUM", ""), *CANDIDATES]:
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


HEADLESS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions"]  # fmt: skip


def dump_dom(exe: str, url: str, budget_ms: int = 3000, timeout: float = 90) -> str:
    """The page's DOM as a person would see it once its scripts ran for `budget_ms` of virtual time
    (`chromium --headless --virtual-time-budget=... --dump-dom URL`)."""
    with tempfile.TemporaryDirectory(prefix="nrt-chrome-") as profile:
        proc = subprocess.run(
            [exe, *HEADLESS, f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    assert proc.returncode == 0 and "<html" in proc.stdout, f"chromium --dump-dom {url}: {proc.stderr[-2000:]}"
    return proc.stdout


class Browser:
    """One headless browser with one page. `host_rules`: Chromium --host-resolver-rules."""

    def __init__(self, exe: str, host_rules: str = ""):
        self._dir = tempfile.mkdtemp(prefix="nrt-chrome-")
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        # Far from 3 and 4, so that the dup2 calls in the child cannot clobber one another.
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 20) for fd in (to_r, from_w)]
        os.close(to_r)
        os.close(from_w)
        to_r, from_w = high

        def child_fds() -> None:
            os.dup2(to_r, 3)
            os.dup2(from_w, 4)

        args = [exe, *HEADLESS, "--remote-debugging-pipe", f"--user-data-dir={self._dir}"]
        if host_rules:
            args.append(f"--host-resolver-rules={host_rules}")
        self.proc = subprocess.Popen(
            [*args, "about:blank"], preexec_fn=child_fds, close_fds=False,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        for fd in (to_r, from_w):
            os.close(fd)
        self._out = os.fdopen(to_w, "wb", buffering=0)
        self._in = os.fdopen(from_r, "rb", buffering=0)
        self._replies: dict[int, queue.Queue] = {}
        self._lock = threading.Lock()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def _read(self) -> None:
        buf = b""
        while chunk := self._in.read(65536):
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg and msg["id"] in self._replies:
                    self._replies[msg["id"]].put(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        with self._lock:
            self._next += 1
            mid = self._next
            self._replies[mid] = queue.Queue()
        msg: dict = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self._out.write(json.dumps(msg).encode() + b"\0")
        reply = self._replies[mid].get(timeout=timeout)
        del self._replies[mid]
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def eval(self, expression: str):
        """The value of a JavaScript expression in the page (promises awaited)."""
        params = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        result = self.send("Runtime.evaluate", params, self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def goto(self, url: str, timeout: float = 30) -> None:
        self.send("Page.navigate", {"url": url}, self.session)
        self.wait("document.readyState === 'complete' && location.href !== 'about:blank'", timeout)

    def wait(self, expression: str, timeout: float = 30) -> object:
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.eval(expression)
            except RuntimeError:  # the page is navigating
                value = None
            if value:
                return value
            assert time.monotonic() < deadline, f"timed out waiting for {expression}"
            time.sleep(0.1)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self._out.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def serve_directory(directory: Path, port: int) -> subprocess.Popen:
    """A plain static web server (another origin than the dashboard's)."""
    import sys

    return subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(directory)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
