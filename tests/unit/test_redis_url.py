"""A Redis URL's password never appears in any message, whatever the URL looks like, and a URL
that cannot be used is a one-line error (never a traceback)."""

from __future__ import annotations

import pytest
from helpers.cli import invoke
from narrate.jobs.errors import ServerUnavailable
from narrate.jobs.server.connection import Connection, redact
from narrate.jobs.settings import Settings

# Each password piece is distinctive, so a fragment of it in a message is found.
SECRETS = ("pw1ab", "pw2cd", "pw3ef", "pw4gh", "pw5ij", "65012")


URLS = [
    "redis://user:pw1ab@127.0.0.1:1/0",
    "redis://:pw1ab@127.0.0.1:1/0",
    "redis://pw1ab@127.0.0.1:1/0",  # a password written where the user name goes
    "redis://user:pw1ab/pw2cd@127.0.0.1:1/0",
    "redis://:pw1ab#pw2cd@127.0.0.1:1/0",
    "redis://:pw1ab@pw2cd@127.0.0.1:1/0",
    "redis://:pw1ab?pw2cd@127.0.0.1:1/0",
    "redis://u:pw1ab/pw2cd#pw3ef@pw4gh?pw5ij@127.0.0.1:1/0",
    "redis://:65012/pw2cd@127.0.0.1:1/0",  # parsed as port 65012 of localhost by urllib
    "redis://user:pw1ab@127.0.0.1:6x/0",  # a non-numeric port
    "redis://user:pw1ab@127.0.0.1:99999/0",
    "redis://user:pw1ab@[::1/0",  # an unclosed IPv6 bracket
    "rediss://user:pw1ab@127.0.0.1:1/0",
    "http://user:pw1ab@127.0.0.1:1/0",
    "unix:///tmp/no-such-narrate.sock?password=pw1ab",
    "unix://user:pw1ab@/tmp/no-such-narrate.sock?db=0",
    "unix:///tmp/no-such-narrate.sock?db=0&password=pw1ab&pw2cd#pw3ef",
    "unix:///tmp/no-such-narrate.sock?PASSWORD=pw1ab",
    "pw1ab",  # not a URL at all
    "127.0.0.1:pw1ab",
]


def leaked(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


@pytest.mark.parametrize("url", URLS)
def test_redacted_url_and_connection_errors_hold_no_password(url):
    assert not leaked(redact(url)), redact(url)
    with pytest.raises(ServerUnavailable) as err:
        Connection(Settings(redis_url=url)).open()
    msg = str(err.value)
    assert "\n" not in msg and not leaked(msg), msg


def test_redaction_keeps_what_helps(monkeypatch):
    assert redact("redis://user:pw1ab@queue-host:6379/2") == "redis://user:***@queue-host:6379/2"
    assert redact("redis://queue-host:6379/0") == "redis://queue-host:6379/0"
    assert redact("unix:///run/r.sock?db=1&password=pw1ab") == "unix:///run/r.sock?db=1&password=***"
    conn = Connection(Settings(redis_url="rediss://:pw1ab#x@h:1/0"))
    assert conn.url == "rediss://:***@h:1/0"


@pytest.mark.parametrize("url", ["redis://user:pw1ab@127.0.0.1:6x/0", "redis://:pw1ab/pw2cd#pw3ef@127.0.0.1:1/0"])
def test_cli_bad_url_is_one_line_without_password(env, url):
    proc = invoke(dict(env, NARRATE_REDIS_URL=url), "status", "some-job")
    err = proc.stderr.strip()
    assert proc.returncode == 1 and err.startswith("Error: ") and len(err.splitlines()) == 1, err
    assert not leaked(proc.stdout + proc.stderr), err
