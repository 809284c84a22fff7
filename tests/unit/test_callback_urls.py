"""A narration's callback URL is normalized before it is stored (host through IDNA, path and query
percent-encoded keeping existing escapes, no fragment) or refused with a 400 naming callback_url
(userinfo, bad ports and hosts, spaces and controls); whatever URL reaches the sender, one POST never
raises past it. uvicorn's log redacts secret query values."""

from __future__ import annotations

import logging

import pytest
from narrate.jobs.web import callbacks
from narrate.jobs.web.access_log import RedactSecrets, log_config, redact
from narrate.jobs.web.errors import ApiError

HOSTS = ("127.0.0.1", "café.example", "[::1]:9000", "hooks.example.com")


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("http://127.0.0.1:8000/café", "http://127.0.0.1:8000/caf%C3%A9"),
        ("http://127.0.0.1:8000/caf%C3%A9", "http://127.0.0.1:8000/caf%C3%A9"),  # an escape is kept, not doubled
        ("HTTP://127.0.0.1/a%zz/%/b?q=naïve&x=%41&y=1 %", None),  # a space: refused below
        (
            "http://Café.Example/Ünïcode?ß=日本#part",
            "http://xn--caf-dma.example/%C3%9Cn%C3%AFcode?%C3%9F=%E6%97%A5%E6%9C%AC",
        ),
        ("http://xn--caf-dma.example/", "http://xn--caf-dma.example/"),
        ("https://hooks.example.com", "https://hooks.example.com/"),
        ("http://hooks.example.com./x#frag", "http://hooks.example.com/x"),
        ('http://127.0.0.1/a%zz/%/b?q=<"x">&k=%41', "http://127.0.0.1/a%25zz/%25/b?q=%3C%22x%22%3E&k=%41"),
        ("http://[::1]:9000/done", "http://[::1]:9000/done"),
        ("http://[0:0::1]:9000/done", "http://[::1]:9000/done"),
    ],
)
def test_a_callback_url_is_stored_normalized(given, stored):
    if stored is None:
        with pytest.raises(ApiError, match="not a URL"):
            callbacks.check(given, HOSTS)
        return
    assert callbacks.check(given, HOSTS) == stored
    assert callbacks.check(stored, HOSTS) == stored  # normalizing twice changes nothing
    assert stored.isascii()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://user:secret@127.0.0.1/", "user name or password"),
        ("http://user@127.0.0.1/", "user name or password"),
        ("http://127.0.0.1:0/", "port"),
        ("http://127.0.0.1:65536/", "port"),
        ("http://127.0.0.1:http/", "port"),
        ("http://127.0.0.1:/", "port"),
        ("http://127.0.0.1/a b", "not a URL"),
        ("http://127.0.0.1/a\tb", "not a URL"),
        ("http://127.0.0.1/\x00", "not a URL"),
        ("http://127.0.0.1/\x85", "not a URL"),
        ("http://127.0.0.1/" + "a" * 2000, "not a URL"),
        ("http://127.0.0.1/" + "é" * 700, "too long"),
        ("http://127.0.0.1/\ud800", "not valid text"),
        ("http://exa$mple.com/", "host name"),
        ("http://a..b/", "host name"),
        ("http://" + "a" * 64 + ".com/", "host name"),
        ("http://127.1/", "host name"),
        ("http://0x7f.0.0.1/", "host name"),
        ("http://[::1/", "brackets"),
        ("http://[fe80::1%25eth0]:9000/", "zone"),
        ("http://[::g]/", "IPv6"),
        ("ftp://127.0.0.1/", "http:// or https://"),
        ("127.0.0.1/x", "http:// or https://"),
        ("http:///x", "http://"),
        ("http://10.0.0.1/", "NARRATE_CALLBACK_HOSTS"),
    ],
)
def test_a_bad_callback_url_is_a_400_naming_callback_url(url, says):
    with pytest.raises(ApiError, match=says) as e:
        callbacks.check(url, HOSTS)
    assert e.value.status == 400 and e.value.param == "callback_url"


def test_post_never_raises_encoding_errors_for_an_old_stored_url():
    # A URL stored before URLs were normalized goes out normalized (http.client would raise on é).
    with pytest.raises(OSError):  # nothing listens there: refused, not UnicodeEncodeError
        callbacks.post("http://127.0.0.1:9/café", {"id": "x"})
    with pytest.raises(callbacks.BadUrl):
        callbacks.post("http://127.0.0.1:9/a b", {"id": "x"})


def test_secret_query_values_are_redacted_from_uvicorns_records():
    assert redact("/feeds/news.xml?token=abc-123_x") == "/feeds/news.xml?token=[redacted]"
    assert redact("/a/b.m4b?x=1&token=t0k&y=2") == "/a/b.m4b?x=1&token=[redacted]&y=2"
    assert (
        redact("/v?api_key=K&key=V&Access-Token=A&q=key")
        == "/v?api_key=[redacted]&key=[redacted]&Access-Token=[redacted]&q=key"
    )
    assert redact("/v?%74oken=abc") == "/v?%74oken=[redacted]" and redact("/v?token=") == "/v?token="
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        "",
        0,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/feeds/n.xml?token=SECRET", "1.1", 200),
        None,
    )
    assert RedactSecrets().filter(record) and "SECRET" not in record.getMessage()
    config = log_config()
    assert all("narrate_redact" in h["filters"] for h in config["handlers"].values())


def test_the_sender_loop_survives_any_error_of_a_pass(external_redis, monkeypatch, caplog):
    import asyncio

    from narrate.jobs.settings import Settings
    from narrate.jobs.web.state import Web

    passes: list[int] = []

    def due(web, skip=()):
        passes.append(1)
        if len(passes) == 1:
            raise RuntimeError("something no one expected")
        return []

    monkeypatch.setattr(callbacks, "due", due)

    async def run() -> None:
        task = asyncio.create_task(callbacks.loop(Web(Settings(), external_redis), every_s=0.02))
        await asyncio.sleep(0.5)
        assert not task.done(), "the loop ended"
        task.cancel()

    with caplog.at_level(logging.WARNING, logger="narrate.serve"):
        asyncio.run(run())
    assert len(passes) > 3 and "callbacks: a pass failed" in caplog.text
