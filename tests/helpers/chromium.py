"""The browser of the browser tests: Playwright (pytest-playwright's fixtures) driving an installed
Chromium through `executable_path` (never `playwright install`, which downloads one), and a plain
static web server for pages of another origin."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


def launch_args(host_rules: str = "") -> dict:
    """Keyword arguments of `browser_type.launch` for the installed Chromium (None: skip the test)."""
    exe = find_chromium()
    args = ["--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check"]
    if host_rules:
        args.append(f"--host-resolver-rules={host_rules}")
    return {"executable_path": exe, "args": args, "headless": True}


def serve_directory(directory: Path, port: int) -> subprocess.Popen:
    """A plain static web server (another origin than the server under test)."""
    return subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(directory)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
