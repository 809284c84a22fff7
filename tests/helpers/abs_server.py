"""A real Audiobookshelf server for the tests: the server source of a release, kept in the repository
(tests/fixtures/audiobookshelf/), unpacked into a cache folder that outlives the test run
(`${XDG_CACHE_HOME:-~/.cache}/narrate-tests/audiobookshelf-VERSION/SHA/`, SHA: the first 16 hex
digits of the archive's sha256), its dependencies installed there once with `npm ci --omit=dev`
(sqlite3 is compiled from source: a C++ compiler, make and python3; node-gyp uses the system's
Node headers when /usr/include/node has them, so it downloads nothing), then started per test on
127.0.0.1 and a free port with a config and metadata folder of the test's own, and stopped with
SIGINT.

What it needs and lacks is said in words (`Unavailable`): the tests skip with that reason. A failed
`npm ci` is remembered (`build-failed` in the cache folder, with the log beside it) so that later
runs skip at once; `python tests/helpers/abs_server.py --build` tries again (.ci/run does), as does
removing the folder.

Standard library only: .ci/run runs this file as a script to build the cache before the tests."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

try:
    from helpers.ports import free_port
except ImportError:  # run as a script (--build): this folder is the first on the path
    from ports import free_port  # type: ignore[no-redef]

VERSION = "2.36.0"
ARCHIVE = Path(__file__).resolve().parents[1] / "fixtures" / "audiobookshelf" / f"audiobookshelf-{VERSION}-server.tgz"
NPM_CI_TIMEOUT_S = 1800
START_TIMEOUT_S = 120
NODE_HINT = "Node.js 20 or later with npm (Debian: apt-get install nodejs npm; or NodeSource's nodejs package)"
FFMPEG_HINT = "Debian's ffmpeg, which has ffprobe (apt-get install ffmpeg)"
BUILD_HINT = "make, a C++ compiler and python3, to compile sqlite3 (Debian: apt-get install build-essential python3)"
INSTALL_HINT = {
    "node": NODE_HINT,
    "npm": NODE_HINT,
    "ffprobe": FFMPEG_HINT,
    "ffmpeg": FFMPEG_HINT,
    "make": BUILD_HINT,
    "c++": BUILD_HINT,
    "python3": BUILD_HINT,
}


class Unavailable(Exception):
    """The server cannot run here: why, and what to install or do."""


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "narrate-tests"


def archive_sha256() -> str:
    return hashlib.sha256(ARCHIVE.read_bytes()).hexdigest()


def install_dir() -> Path:
    """This archive's folder in the cache: `server/` (the source and its node_modules), `ready`,
    `build.log`, or `build-failed`."""
    return cache_root() / f"audiobookshelf-{VERSION}" / archive_sha256()[:16]


def _missing(names: tuple[str, ...]) -> list[str]:
    found = {"c++": shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")}
    return [n for n in names if not (found[n] if n in found else shutil.which(n))]


def _say_missing(missing: list[str], what: str) -> str:
    hints = "; ".join(dict.fromkeys(INSTALL_HINT[n] for n in missing))
    return f"{what} needs {', '.join(missing)}, not found on PATH: install {hints}"


def _node_version() -> str:
    ran = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=60)
    return ran.stdout.strip()


def _extract(archive: Path, into: Path) -> None:
    with tarfile.open(archive) as tgz:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
            tgz.extractall(into, filter="data")
        else:
            tgz.extractall(into)  # the repository's own archive


def build(force: bool = False) -> Path:
    """The unpacked server with its node_modules (built once, under a lock, into the cache).
    Raises Unavailable. `force`: try again after a failed build."""
    if not ARCHIVE.is_file():
        raise Unavailable(f"the Audiobookshelf server archive {ARCHIVE} is missing")
    missing = _missing(("node", "npm", "ffprobe", "ffmpeg"))
    if missing:
        raise Unavailable(_say_missing(missing, "the Audiobookshelf test server"))
    node = _node_version()
    if not node.startswith("v") or int(node[1:].split(".")[0] or 0) < 20:
        raise Unavailable(f"Audiobookshelf {VERSION} needs Node.js 20 or later; `node --version` says {node!r}")
    folder = install_dir()
    server, ready, failed = folder / "server", folder / "ready", folder / "build-failed"
    built = (server / "node_modules" / "sqlite3").is_dir
    if ready.is_file() and built():
        return server
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process or .ci/run may be building it now
        if ready.is_file() and built():
            return server
        ready.unlink(missing_ok=True)
        if failed.is_file() and not force:
            raise Unavailable(failed.read_text().strip())
        failed.unlink(missing_ok=True)
        missing = _missing(("make", "c++", "python3"))
        if missing:
            raise Unavailable(_say_missing(missing, f"building Audiobookshelf {VERSION}'s sqlite3"))
        shutil.rmtree(server, ignore_errors=True)
        server.mkdir()
        _extract(ARCHIVE, server)
        env = {
            **os.environ,
            "npm_config_cache": str(cache_root() / "npm-cache"),
            "npm_config_update_notifier": "false",
            "npm_config_fund": "false",
            "npm_config_audit": "false",
        }
        if Path("/usr/include/node/common.gypi").is_file():  # the system's Node headers: node-gyp downloads none
            env["npm_config_nodedir"] = "/usr"
        log = folder / "build.log"
        started = time.monotonic()
        with open(log, "wb") as out:
            try:
                ran = subprocess.run(
                    ["npm", "ci", "--omit=dev", "--prefer-offline", "--foreground-scripts"],
                    cwd=server,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=NPM_CI_TIMEOUT_S,
                )
                rc: int | str = ran.returncode
            except subprocess.TimeoutExpired:
                rc = f"timeout after {NPM_CI_TIMEOUT_S} s"
        if rc == 0:
            check = subprocess.run(["node", "-e", "require('sqlite3')"], cwd=server, capture_output=True, timeout=60)
            rc = 0 if check.returncode == 0 else f"sqlite3 does not load: {check.stderr.decode()[-300:]}"
        if rc != 0:
            tail = log.read_text(errors="replace").strip().splitlines()[-8:]
            failed.write_text(
                f"`npm ci --omit=dev` for Audiobookshelf {VERSION} failed ({rc}) in {server}; the end of {log}:\n"
                + "\n".join("  " + line for line in tail)
                + "\nIt needs the npm registry (or a filled npm cache) and, to compile sqlite3, make, a C++ "
                f"compiler and python3. Try again: python tests/helpers/abs_server.py --build (or remove {folder})"
            )
            raise Unavailable(failed.read_text().strip())
        ready.write_text(
            json.dumps({"built_s": round(time.monotonic() - started, 1), "node": node, "sha256": archive_sha256()})
        )
        return server


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class AbsServer:
    """One Audiobookshelf server process with its config, metadata and log under `workdir`."""

    def __init__(self, server: Path, workdir: Path) -> None:
        self.server_dir = server
        self.workdir = workdir
        self.log = workdir / "server.log"
        self.token: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> AbsServer:
        for name in ("config", "metadata"):
            (self.workdir / name).mkdir(parents=True, exist_ok=True)
        for _ in range(3):  # a free port may be taken between the probe and the server's bind
            port = free_port()
            env = {
                **os.environ,
                "NODE_ENV": "production",
                "HOST": "127.0.0.1",
                "PORT": str(port),
                "CONFIG_PATH": str(self.workdir / "config"),
                "METADATA_PATH": str(self.workdir / "metadata"),
                "SOURCE": "docker",
                "SKIP_BINARIES_CHECK": "1",
                "RATE_LIMIT_AUTH_MAX": "0",
                "FFMPEG_PATH": shutil.which("ffmpeg") or "ffmpeg",
                "FFPROBE_PATH": shutil.which("ffprobe") or "ffprobe",
            }
            with open(self.log, "ab") as out:
                self.proc = subprocess.Popen(
                    ["node", "index.js"],
                    cwd=self.server_dir,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            self.url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + START_TIMEOUT_S
            while time.monotonic() < deadline and self.proc.poll() is None:
                with contextlib.suppress(OSError):
                    with urllib.request.urlopen(f"{self.url}/healthcheck", timeout=5) as answer:
                        if answer.status == 200:
                            return self
                time.sleep(0.1)
            if self.proc.poll() is None:
                self.stop()
                raise RuntimeError(f"Audiobookshelf did not answer /healthcheck in {START_TIMEOUT_S} s: {self.tail()}")
            if "EADDRINUSE" not in self.tail():
                break
        raise RuntimeError(f"Audiobookshelf exited ({self.proc.returncode if self.proc else '?'}): {self.tail()}")

    def tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)  # its graceful stop
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    # The API, as its web client calls it.

    def call(
        self, method: str, path: str, body: Any = None, raw: bool = False, headers: dict[str, str] | None = None
    ) -> Any:
        data, sent = None, dict(headers or {})
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            sent.setdefault("Content-Type", "application/json")
        if self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(req, timeout=60) as answer:
                payload, kind = answer.read(), answer.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            raise ApiError(e.code, f"{method} {path}: {e.code} {e.read()[:300]!r}") from None
        if raw:
            return kind, payload
        return json.loads(payload) if "json" in kind else payload.decode(errors="replace")

    def create_root(self, username: str = "root", password: str = "root-password") -> str:
        """The root user (a fresh server has none), logged in: its access token (also kept for calls)."""
        self.call("POST", "/init", {"newRoot": {"username": username, "password": password}})
        login = self.call("POST", "/login", {"username": username, "password": password})
        self.token = str(login["user"].get("accessToken") or login["user"]["token"])
        return self.token

    def create_book_library(self, name: str, folder: Path) -> dict:
        """A book library on `folder`, its watcher off: only asked-for scans see new books."""
        return dict(
            self.call(
                "POST",
                "/api/libraries",
                {
                    "name": name,
                    "mediaType": "book",
                    "folders": [{"fullPath": str(folder)}],
                    "settings": {"disableWatcher": True},
                },
            )
        )

    def library(self, library_id: str) -> dict:
        found = self.call("GET", f"/api/libraries/{library_id}")
        return dict(found.get("library", found))

    def wait_for_scan(self, library_id: str, after: int | None, timeout: float = 120) -> None:
        """Until the library's lastScan has moved past `after` and no scan task of it runs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            last = self.library(library_id).get("lastScan") or 0
            tasks = self.call("GET", "/api/tasks").get("tasks", [])
            running = [
                t
                for t in tasks
                if t.get("action") == "library-scan"
                and not t.get("isFinished")
                and (t.get("data") or {}).get("libraryId") == library_id
            ]
            if last != (after or 0) and not running:
                return
            time.sleep(0.2)
        raise TimeoutError(f"the scan of library {library_id} did not finish in {timeout} s: {self.tail()}")

    def scan(self, library_id: str) -> None:
        before = self.library(library_id).get("lastScan")
        self.call("POST", f"/api/libraries/{library_id}/scan")
        self.wait_for_scan(library_id, before)

    def items(self, library_id: str) -> list[dict]:
        return list(self.call("GET", f"/api/libraries/{library_id}/items")["results"])

    def item(self, item_id: str) -> dict:
        return dict(self.call("GET", f"/api/items/{item_id}?expanded=1"))

    def cover(self, item_id: str) -> tuple[str, bytes]:
        kind, data = self.call("GET", f"/api/items/{item_id}/cover?raw=1", raw=True)
        return str(kind), bytes(data)


def main(argv: list[str]) -> int:
    """`--build`: build the cache folder (again after a failure); `--where`: print it."""
    if argv[1:] == ["--where"]:
        print(install_dir())
        return 0
    if argv[1:] != ["--build"]:
        print("usage: abs_server.py --build | --where", file=sys.stderr)
        return 2
    try:
        built = build(force=True)
    except Unavailable as e:
        print(f"Audiobookshelf test server not built: {e}", file=sys.stderr)
        return 1
    print(f"Audiobookshelf {VERSION} test server ready in {built}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
