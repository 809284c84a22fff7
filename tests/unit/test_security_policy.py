"""One security policy for both web servers (jobs/security.py): the same request gets the same
decision from `narrate serve`'s guard (jobs/web/guard.py, an ASGI middleware) and from `narrate
dashboard`'s (jobs/dashboard/guard.py, Flask hooks), over a matrix of method x path kind x where the
request comes from x credentials x bind address and Host; both count the same addresses as
loopback (::1 too); and /openapi.json declares the key and the session cookie as security schemes,
which the routes check again when no guard stands in front of them."""

from __future__ import annotations

import asyncio
import base64
import itertools
from typing import Any

import pytest
from narrate.jobs import security
from narrate.jobs.security import Credential, Reason, Site, decide
from narrate.jobs.web.guard import BodyRules, Guard, served_hosts

PORT = 8000
KEY = "k" * 32
USER, PASSWORD = "admin", "p" * 20
EVIL = "http://evil.example"

# Where a request comes from: the headers a browser (or a program) sends about it.
SOURCES: dict[str, dict[str, str]] = {
    "program (none)": {},
    "own origin": {"origin": "http://127.0.0.1:8000"},
    "own referer": {"referer": "http://localhost:8000/queue"},
    "own page (fetch metadata)": {"sec-fetch-site": "same-origin", "sec-fetch-mode": "cors"},
    "typed by the person": {"sec-fetch-site": "none", "sec-fetch-mode": "navigate"},
    "foreign origin": {"origin": EVIL},
    "null origin": {"origin": "null"},
    "foreign referer": {"referer": f"{EVIL}/page.html"},
    "foreign origin, own referer": {"origin": EVIL, "referer": "http://127.0.0.1:8000/"},
    "own origin, cross-site": {"origin": "http://127.0.0.1:8000", "sec-fetch-site": "cross-site"},
    "another local server": {"origin": "http://localhost:9999", "sec-fetch-site": "same-site"},
    "cross-site script": {"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "script"},
    "cross-site link": {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document"},
    "cross-site frame": {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "iframe"},
}
METHODS = ("GET", "HEAD", "OPTIONS", "POST", "DELETE")
PATHS = {"page": "/queue", "data": "/v1/narrations"}  # a path both servers treat alike (neither public)
CREDENTIALS = ("none configured", "none sent", "wrong", "right")
BINDS = {
    "127.0.0.1": ("127.0.0.1:8000", "[::1]:8000", "localhost:8000", "evil.example:8000"),
    "0.0.0.0": ("0.0.0.0:8000", "127.0.0.1:8000", "127.0.0.1.evil.example:8000", ""),
}


def web_guard(bind: str, key: str | None) -> Guard:
    async def app(scope, receive, send) -> None:  # never reached: only the decision is asked for
        raise AssertionError

    return Guard(app, served_hosts(bind, PORT), key, BodyRules(), 1 << 20)


def web_status(bind: str, credentials: str, method: str, path: str, host: str, source: dict[str, str], n: int) -> int:
    g = web_guard(bind, None if credentials == "none configured" else KEY)
    sent = {"wrong": {"authorization": "Bearer nope"}, "right": {"authorization": f"Bearer {KEY}"}}
    headers = {"host": host, **source, **sent.get(credentials, {})}
    refused = g.check(method, headers, path, f"10.0.{n // 250}.{n % 250}")  # an address each: no wrong-key limit
    return 200 if refused is None else refused[0]


@pytest.fixture(scope="module")
def dashboards() -> dict[tuple[str, bool], Any]:
    """Test clients of a Flask app behind the dashboard's guard, by (bind, with a password)."""
    flask = pytest.importorskip("flask")
    from narrate.jobs.dashboard import guard
    from narrate.jobs.dashboard.app import served_hosts as dashboard_hosts

    made = {}
    for bind, with_password in itertools.product(BINDS, (False, True)):
        app = flask.Flask(f"dashboard-{bind}-{with_password}")
        every = ["GET", "HEAD", "OPTIONS", "POST", "DELETE"]
        app.add_url_rule("/", "root", lambda: "ok", methods=every)
        app.add_url_rule("/<path:path>", "any", lambda path: "ok", methods=every)
        guard.install(
            app, dashboard_hosts(bind, PORT), USER if with_password else None, PASSWORD if with_password else None
        )
        made[bind, with_password] = app.test_client()
    return made


def dashboard_status(
    dashboards, bind: str, credentials: str, method: str, path: str, host: str, source: dict[str, str]
) -> int:
    client = dashboards[bind, credentials != "none configured"]
    basic = {"wrong": f"{USER}:nope", "right": f"{USER}:{PASSWORD}"}
    headers = {"Host": host, **source}
    if credentials in basic:
        headers["Authorization"] = "Basic " + base64.b64encode(basic[credentials].encode()).decode()
    return client.open(path, method=method, headers=headers).status_code


def test_both_servers_decide_every_request_alike(dashboards):
    """Method x path kind x source x credentials x bind and Host: the web's guard and the dashboard's
    refuse the same requests with the same status; only how a browser is asked to sign in differs
    (the web sends a page load to its form, 303; the dashboard asks for basic auth, 401)."""
    cases = itertools.product(BINDS.items(), CREDENTIALS, METHODS, PATHS.items(), SOURCES.items())
    seen, n = {}, 0
    for (bind, hosts), credentials, method, (kind, path), (source_name, source) in cases:
        for host in hosts:
            n += 1
            web = web_status(bind, credentials, method, path, host, source, n)
            dash = dashboard_status(dashboards, bind, credentials, method, path, host, source)
            case = (bind, host, credentials, method, kind, source_name)
            assert (401 if web == 303 else web) == dash, (case, web, dash)
            seen[case] = dash
    refused = {status for status in seen.values() if status != 200}
    assert refused == {400, 401, 403}, refused  # the matrix reaches every kind of refusal
    assert sum(1 for s in seen.values() if s == 200) > len(seen) // 10

    # The one rule, spot-checked: a program's write is served (with credentials, where they are
    # configured); another site's is not, whatever credentials it carries.
    on = ("127.0.0.1", "127.0.0.1:8000")
    assert seen[(*on, "none configured", "POST", "page", "program (none)")] == 200
    assert seen[(*on, "right", "POST", "data", "program (none)")] == 200
    assert seen[(*on, "none sent", "POST", "data", "program (none)")] == 401
    assert seen[(*on, "right", "POST", "page", "foreign referer")] == 403
    assert seen[(*on, "right", "POST", "page", "typed by the person")] == 200
    assert seen[(*on, "none configured", "GET", "page", "cross-site link")] == 200
    assert seen[(*on, "none configured", "GET", "page", "cross-site frame")] == 403
    assert seen[(*on, "none configured", "OPTIONS", "page", "cross-site link")] == 403
    assert seen[("127.0.0.1", "[::1]:8000", "none configured", "GET", "page", "program (none)")] == 200
    assert seen[("127.0.0.1", "evil.example:8000", "right", "GET", "page", "own origin")] == 400


def test_the_policy_alone():
    site = Site(security.served_hosts("127.0.0.1", PORT), True, ("/login",), ("/v1/",), "/login")
    asked = []

    def carried() -> Credential:
        asked.append(1)
        return Credential.NONE

    page_load = {"host": "127.0.0.1:8000", "sec-fetch-mode": "navigate", "accept": "text/html"}
    said = decide(site, "GET", "/jobs/x", page_load, carried)
    assert (said.status, said.reason, said.location) == (303, Reason.SIGN_IN, "/login?next=/jobs/x")
    said = decide(site, "GET", "/v1/narrations", page_load, carried)  # programs' paths: no sign-in form
    assert (said.status, said.reason) == (401, Reason.NO_CREDENTIALS)
    asked.clear()
    assert decide(site, "GET", "/login", page_load, carried).allowed and not asked  # public: not asked
    assert decide(site, "GET", "/x", {"host": "evil.example"}, carried).reason is Reason.HOST and not asked
    said = decide(site, "POST", "/login", {"host": "127.0.0.1:8000", "origin": EVIL}, carried)
    assert (said.status, said.reason, said.said) == (403, Reason.CROSS_SITE_SOURCE, EVIL)


@pytest.mark.parametrize(
    ("bind", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("127.evil.example", False),
    ],
)
def test_both_servers_count_the_same_addresses_as_loopback(bind, loopback):
    from narrate.jobs.dashboard.app import check_exposure as dashboard_exposure
    from narrate.jobs.errors import BadInput
    from narrate.jobs.web.app import check_exposure as web_exposure

    assert security.is_loopback(bind) is loopback
    for check in (lambda: web_exposure(bind, None), lambda: dashboard_exposure(bind, None, None)):
        if loopback:
            check()
        else:
            with pytest.raises(BadInput):
                check()
    web_exposure(bind, KEY)
    dashboard_exposure(bind, USER, PASSWORD)


def test_both_servers_answer_the_same_host_names():
    from narrate.jobs.dashboard.app import served_hosts as dashboard_hosts

    for bind, port, configured in (("127.0.0.1", 8000, ()), ("::1", 80, ("box.lan",)), ("0.0.0.0", 9181, ("a.b:1",))):
        assert served_hosts(bind, port, configured) == dashboard_hosts(bind, port, configured)
    assert {"127.0.0.1:8000", "localhost:8000", "[::1]:8000"} <= served_hosts("127.0.0.1", 8000)
    with pytest.raises(Exception, match="NARRATE_DASHBOARD_HOSTS") as e:
        dashboard_hosts("0.0.0.0", 9181, ["bad name!"])
    assert e.value.param == "NARRATE_DASHBOARD_HOSTS"


# The OpenAPI document and the routes' own check.


def _app(env, monkeypatch, key: str | None):
    import redis
    from narrate.jobs.settings import Settings
    from narrate.jobs.web.app import make_app
    from narrate.jobs.web.state import Web

    if key:
        monkeypatch.setenv("NARRATE_API_KEY", key)
    else:
        monkeypatch.delenv("NARRATE_API_KEY", raising=False)
    return make_app(Web(Settings.from_env(), redis.Redis(port=1)), "127.0.0.1", PORT)


def test_the_openapi_document_declares_the_key_and_the_session_cookie(env, monkeypatch):
    doc = _app(env, monkeypatch, None).app.openapi()
    schemes = doc["components"]["securitySchemes"]
    assert schemes["HTTPBearer"]["type"] == "http" and schemes["HTTPBearer"]["scheme"] == "bearer"
    assert schemes["APIKeyCookie"] == {
        **schemes["APIKeyCookie"],
        "type": "apiKey",
        "in": "cookie",
        "name": "narrate_session",
    }
    operations = [(path, method, op) for path, item in doc["paths"].items() for method, op in item.items()]
    assert len(operations) >= 12 and all(path.startswith("/v1/") for path, _, _ in operations)
    for path, method, op in operations:
        assert {"HTTPBearer": []} in op["security"] and {"APIKeyCookie": []} in op["security"], (path, method)


def _call(app, path: str, headers: dict[str, str]) -> int:
    got: dict[str, Any] = {}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            got["status"] = message["status"]

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in {"host": "127.0.0.1:8000", **headers}.items()],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", PORT),
        "state": {},
    }
    asyncio.run(app(scope, receive, send))
    return got["status"]


def test_a_route_behind_no_guard_still_asks_for_the_key(env, monkeypatch):
    guarded = _app(env, monkeypatch, KEY)
    bare = guarded.app  # the FastAPI app without its guard: the routes' declared security checks
    assert _call(bare, "/v1/models", {}) == 401
    assert _call(bare, "/v1/models", {"authorization": "Bearer nope"}) == 401
    assert _call(bare, "/v1/models", {"authorization": f"Bearer {KEY}"}) == 200
    assert _call(guarded, "/v1/models", {}) == 401
    assert _call(guarded, "/v1/models", {"authorization": f"Bearer {KEY}"}) == 200
    assert _call(_app(env, monkeypatch, None).app, "/v1/models", {}) == 200  # no key: nothing to ask for
