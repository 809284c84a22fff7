"""The pages' session cookie, in this process (jobs/web/guard.py, jobs/web/login.py,
jobs/web/sessions.py): once an API key is set, a request passes with the key as a Bearer token or
with the cookie of a live session the login form started (kept in Redis, ended by signing out); a
browser opening a page without either is sent to /login, a script or htmx
gets 401; the login form and its static files need neither; the cookie of another key, or a
malformed cookie header, lets nothing through; a valid cookie does not let another site post; and
after signing in only a path of this server is followed."""

from __future__ import annotations

import hashlib

import pytest
from narrate.jobs.web import sessions
from narrate.jobs.web.guard import PUBLIC_PATHS, SESSION_COOKIE, BodyRules, Guard, served_hosts
from narrate.jobs.web.login import local_path

KEY = "k" * 32
HOST = "127.0.0.1:8000"
PAGE_LOAD = {"sec-fetch-mode": "navigate", "sec-fetch-site": "none", "accept": "text/html,application/xhtml+xml"}


def guard(key: str | None = KEY) -> Guard:
    async def app(scope, receive, send) -> None:  # never reached: only `check` is called
        raise AssertionError

    return Guard(
        app,
        served_hosts("127.0.0.1", 8000),
        key,
        BodyRules(),
        1 << 20,
        session_valid=lambda token: key is not None and token == session_token(key),
    )


def session_token(key: str) -> str:
    """The token of the one live session each test server has (jobs/web/sessions.py makes random ones)."""
    return hashlib.sha256(b"session of " + key.encode()).hexdigest()


def check(g: Guard, method: str, path: str, **headers: str) -> tuple[int, str, dict[str, str]] | None:
    return g.check(method, {"host": HOST, **{k.replace("_", "-"): v for k, v in headers.items()}}, path)


def cookie(key: str = KEY) -> str:
    return f"{SESSION_COOKIE}={session_token(key)}"


def test_a_session_is_random_kept_by_its_hash_expires_and_ends_when_signed_out(external_redis):
    r = external_redis
    token = sessions.start(r, KEY)
    assert len(token) >= 40 and token != sessions.start(r, KEY) and KEY not in token
    assert sessions.valid(r, KEY, token)
    stored = [k.decode() for k in r.keys("narrate:session:*")]
    assert len(stored) == 2 and all(token not in k for k in stored)  # only its hash is kept
    assert all(0 < r.ttl(k) <= sessions.SESSION_DAYS * 86400 for k in stored)  # it expires
    assert not sessions.valid(r, KEY + "x", token)  # another key: every session of the old one ends
    for wrong in ("", token[:-1], token + "0", "x" * 5000):
        assert not sessions.valid(r, KEY, wrong)
    sessions.end(r, token)
    assert not sessions.valid(r, KEY, token)  # signed out: a copy of the cookie lets nothing in
    assert SESSION_COOKIE == "narrate_session" and "/login" in PUBLIC_PATHS and "/static/" in PUBLIC_PATHS


@pytest.mark.parametrize("path", ["/v1/narrations", "/v1/audio/voices", "/queue", "/queue/rows", "/voices", "/"])
def test_the_key_or_the_session_cookie_lets_a_request_in(path):
    g = guard()
    assert check(g, "GET", path, authorization=f"Bearer {KEY}") is None
    assert check(g, "GET", path, cookie=cookie()) is None
    assert check(g, "GET", path, cookie=f"theme=dark; {cookie()}; lang=en") is None  # among other cookies
    assert check(g, "GET", path, cookie=cookie(), **PAGE_LOAD) is None
    assert check(g, "POST", path, cookie=cookie(), origin="http://127.0.0.1:8000", sec_fetch_site="same-origin") is None
    assert check(g, "GET", path, authorization="Bearer wrong", cookie=cookie()) is None  # either one suffices


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_an_api_request_without_the_key_or_cookie_is_401(method):
    g = guard()
    for headers, says in (
        ({}, "no API key"),
        ({"authorization": "Bearer wrong"}, "a wrong API key"),
        ({"cookie": f"{SESSION_COOKIE}=wrong"}, "no API key"),
        ({"cookie": f"{SESSION_COOKIE}="}, "no API key"),
        ({"cookie": f"other={session_token(KEY)}"}, "no API key"),  # the token, wrong name
        ({"cookie": f"{SESSION_COOKIE}={session_token(KEY)[:-1]}"}, "no API key"),
        ({"cookie": f"{SESSION_COOKIE}={session_token(KEY)}0"}, "no API key"),
        ({"cookie": f"{SESSION_COOKIE}={KEY}"}, "no API key"),
    ):
        said = g.check(method, {"host": HOST, **headers}, "/v1/narrations")
        assert said is not None, headers
        status, message, extra = said
        assert status == 401 and message.startswith(f"{says}: send Authorization: Bearer KEY"), (headers, message)
        assert extra == {"www-authenticate": 'Bearer realm="narrate"'}


def test_a_browser_opening_a_page_is_sent_to_login():
    g = guard()
    for method in ("GET", "HEAD"):
        assert check(g, method, "/queue", **PAGE_LOAD) == (
            303,
            "sign in first: /login",
            {"location": "/login?next=/queue"},
        )
    assert check(g, "GET", "/voices", accept="text/html")[2] == {"location": "/login?next=/voices"}  # no Sec-Fetch
    assert check(g, "GET", "/queue", sec_fetch_mode="navigate")[0] == 303  # no Accept
    said = check(g, "GET", "/jobs/narrate-1 x&y=1", **PAGE_LOAD)
    assert said[0] == 303 and said[2]["location"] == "/login?next=/jobs/narrate-1%20x%26y%3D1"  # one query value
    assert check(g, "GET", "/queue", cookie=cookie("other-key-" + "o" * 22), **PAGE_LOAD)[0] == 303
    assert check(g, "GET", "/queue", cookie=f"{SESSION_COOKIE}=", **PAGE_LOAD)[0] == 303


def test_scripts_htmx_and_api_paths_get_401_not_a_redirect():
    g = guard()
    for headers in (
        {"hx-request": "true", **PAGE_LOAD},
        {"hx-request": "true", "accept": "text/html"},
        {"accept": "application/json"},
        {},
    ):
        said = check(g, "GET", "/queue/rows", **headers)
        assert said[0] == 401 and said[2] == {"www-authenticate": 'Bearer realm="narrate"'}, headers
    for path in ("/v1/narrations", "/openapi.json", "/docs"):
        assert check(g, "GET", path, **PAGE_LOAD)[0] == 401, path  # a browser on the API is not sent to a form
    assert check(g, "POST", "/queue", **PAGE_LOAD)[0] == 401  # only a read is redirected


def test_the_login_form_and_static_files_need_no_key():
    g = guard()
    assert check(g, "GET", "/login", **PAGE_LOAD) is None
    assert check(g, "GET", "/login") is None
    assert check(g, "POST", "/login", origin="http://127.0.0.1:8000", sec_fetch_site="same-origin") is None
    assert check(g, "GET", "/static/narrate.css") is None
    assert check(g, "GET", "/static/htmx.min.js", accept="*/*") is None
    assert check(g, "GET", "/statics")[0] == 401 and check(g, "GET", "/static")[0] == 401  # only under /static/
    # public does not mean open to other sites
    assert check(g, "POST", "/login", origin="http://evil.example")[0] == 403
    assert check(g, "GET", "/login", host="evil.example")[0] == 400


def test_the_cookie_of_another_key_is_refused():
    g = guard()
    other = cookie("other-key-" + "o" * 22)
    assert check(g, "GET", "/v1/narrations", cookie=other)[0] == 401
    assert check(g, "GET", "/queue/rows", cookie=other, hx_request="true")[0] == 401
    assert check(guard("other-key-" + "o" * 22), "GET", "/v1/narrations", cookie=other) is None  # its own server


def test_without_a_key_no_cookie_is_needed():
    g = guard(None)
    assert check(g, "GET", "/queue", **PAGE_LOAD) is None
    assert check(g, "GET", "/v1/narrations") is None
    assert check(g, "GET", "/v1/narrations", cookie=f"{SESSION_COOKIE}=anything") is None


@pytest.mark.parametrize(
    "header",
    [
        "",
        ";",
        "=",
        ";;=;",
        SESSION_COOKIE,
        f"{SESSION_COOKIE}=",
        f'{SESSION_COOKIE}="unterminated',
        f'{SESSION_COOKIE}="{session_token(KEY)}',
        f"{SESSION_COOKIE}={session_token(KEY)}\x00",
        "\x00\xff=\x01",
        "a b=c",
        'a={"x": 1}',
        "expires=1",
        f"{SESSION_COOKIE}=\\",
        "=" * 5000,
        ";" * 5000,
    ],
)
def test_a_malformed_cookie_header_is_refused_without_raising(header):
    g = guard()
    assert check(g, "GET", "/v1/narrations", cookie=header)[0] == 401
    assert check(g, "GET", "/queue", cookie=header, **PAGE_LOAD)[0] == 303


def test_a_valid_cookie_does_not_let_another_site_post():
    g = guard()
    for method in ("POST", "DELETE"):
        for headers in (
            {"origin": "http://evil.example"},
            {"origin": "null"},
            {"referer": "http://evil.example/page"},
            {"sec-fetch-site": "cross-site"},
            {"sec-fetch-site": "same-site", "origin": "http://127.0.0.1:8000"},
            {"origin": "http://127.0.0.1:9000"},
        ):
            said = g.check(method, {"host": HOST, "cookie": cookie(), **headers}, "/jobs/narrate-1/cancel")
            assert said is not None and said[0] == 403, (method, headers)
    said = check(g, "POST", "/jobs/narrate-1/priority", cookie=cookie(), origin="http://evil.example")
    assert said[:2] == (403, "refused a cross-site request from http://evil.example")
    assert check(g, "GET", "/queue/rows", cookie=cookie(), origin="http://evil.example")[0] == 403  # nor read
    assert check(g, "GET", "/queue/rows", cookie=cookie(), sec_fetch_site="cross-site", sec_fetch_mode="cors")[0] == 403
    assert check(g, "POST", "/jobs/narrate-1/cancel", cookie=cookie(), origin="http://127.0.0.1:8000") is None


@pytest.mark.parametrize(
    "raw, goes",
    [
        ("/voices", "/voices"),
        ("/queue", "/queue"),
        ("/jobs/narrate-1?x=1", "/jobs/narrate-1?x=1"),
        ("  /voices  ", "/voices"),
        ("//evil.example", "/queue"),
        ("//evil.example/queue", "/queue"),
        ("https://evil.example", "/queue"),
        ("http://evil.example/", "/queue"),
        ("/\\evil", "/queue"),
        ("/\\/evil.example", "/queue"),
        (" //evil.example", "/queue"),
        ("evil.example", "/queue"),
        ("javascript:alert(1)", "/queue"),
        ("", "/queue"),
        ("   ", "/queue"),
        (None, "/queue"),
    ],
)
def test_after_signing_in_only_a_path_here_is_followed(raw, goes):
    assert local_path(raw) == goes


@pytest.mark.parametrize("other", ["a=b c", 'prefs={"x":1}', "flag", "x=\\", "theme=dark"])
def test_another_apps_malformed_cookie_does_not_hide_the_session(other):
    """Cookies are not separated by port: another app on localhost may set any cookie, and the
    session must still be found beside it (else a signed-in browser loops through /login)."""
    g = guard()
    for header in (f"{other}; {cookie()}", f"{cookie()}; {other}"):
        assert check(g, "GET", "/v1/narrations", cookie=header) is None, header
