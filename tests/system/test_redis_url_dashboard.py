"""The dashboard's pages show no Redis password, for a TCP server and the embedded one."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.servers import PrivateRedis
from narrate.jobs.server.embedded import EmbeddedServer

# Each password piece is distinctive, so a fragment of it in a message is found.
SECRETS = ("pw1ab", "pw2cd", "pw3ef", "pw4gh", "pw5ij", "65012")


def leaked(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


DASHBOARD_PAGE = """
import sys
from narrate.jobs.dashboard.app import make_app
client = make_app(sys.argv[1]).test_client()
page = client.get("/", follow_redirects=True, headers={"Host": "127.0.0.1:9181"})
print(page.status_code, page.get_data(as_text=True))
"""


def test_dashboard_pages_show_no_password(home):
    pytest.importorskip("rq_dashboard")
    tcp = PrivateRedis()
    tcp.password = "pw1ab@pw2cd"  # rq-dashboard's own masking stops at the first "@"
    tcp.url = f"redis://:{tcp.password}@127.0.0.1:{tcp.port}/0"
    embedded = EmbeddedServer(home)
    try:
        tcp.start()
        embedded.acquire()
        for url in (tcp.url, f"{embedded.url}?db=0&password=pw1ab"):
            # rq-dashboard registers a global blueprint: one app per process
            proc = subprocess.run(
                [sys.executable, "-c", DASHBOARD_PAGE, url], capture_output=True, text=True, timeout=60
            )
            assert proc.stdout.startswith("200 ") and "rq-instances" in proc.stdout, proc.stdout[-300:] + proc.stderr
            assert not leaked(proc.stdout + proc.stderr), url
    finally:
        embedded.release()
        tcp.close()
