"""`narrate dashboard` against hostile requests, over real HTTP to a real dashboard process with
jobs enqueued by `narrate submit`: cross-site requests that change state are refused, only the
dashboard's own host names are served (DNS rebinding), nothing is readable cross-origin, its
pages cannot be framed, and its own (same-origin) requests and basic auth keep working."""

from __future__ import annotations

import base64
import json
import subprocess

import pytest
from helpers.books import book
from helpers.dashboard import NO_HOST, dashboard, fail_job, request, state
from helpers.fake import fake_env
from helpers.ops import submit_book
from helpers.procs import NARRATE
from helpers.servers import free_port

EVIL = "http://evil.example"
# Every state-changing endpoint rq-dashboard 0.9 has; {a} is a queued job, {f} a failed one.
STATE_CHANGING = [
    "/job/{a}/delete",
    "/job/{f}/delete",
    "/job/{f}/requeue",
    "/requeue/narrate",
    "/queue/narrate/queued/empty",
    "/queue/narrate/failed/empty",
    "/queue/narrate/started/empty",
    "/queue/narrate/finished/empty",
    "/queue/narrate/canceled/empty",
    "/queue/narrate/deferred/empty",
    "/queue/narrate/scheduled/empty",
    "/queue/narrate/compact",
]


@pytest.fixture
def jobs(env, home, voice_wav, external_redis):
    """(environment, Redis client, queued job id, failed job id), both submitted with `narrate submit`."""
    e = fake_env(env, home)
    queued = submit_book(e, home, voice_wav, book(3), name="queued")
    failed = submit_book(e, home, voice_wav, book(4), name="failed")
    fail_job(external_redis, failed)
    return e, external_redis, queued, failed


def _refused(reply, status: int = 403) -> None:
    assert reply.status == status, (reply.status, reply.text[:300])
    assert reply.headers["content-type"].startswith("text/plain"), reply.headers
    assert 0 < len(reply.body) < 300 and b"<" not in reply.body, reply.text


def test_cross_site_requests_that_change_state_are_refused_and_change_nothing(jobs):
    e, r, a, f = jobs
    before = state(r)
    assert before["queued"] == [a] and before["failed"] == [f]
    with dashboard(e) as port:
        other_local_page = f"http://localhost:{free_port()}"  # another server on this host: a different origin
        hostile = [
            {"Origin": EVIL},
            {"Origin": EVIL, "Referer": f"http://127.0.0.1:{port}/"},  # Origin wins over Referer
            {"Referer": f"{EVIL}/page.html"},
            {"Origin": "null"},  # sandboxed frames, data: and file: pages
            {"Origin": other_local_page},
            {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "cross-site"},
        ]
        for path in STATE_CHANGING:
            for headers in hostile:
                reply = request(port, "POST", path.format(a=a, f=f), headers)
                _refused(reply)
        assert state(r) == before

        # The dashboard's own pages send a same-origin Origin (or at least a Referer) with their POSTs.
        own = f"http://127.0.0.1:{port}"
        reply = request(port, "POST", f"/job/{a}/delete", {"Origin": own})
        assert reply.status == 200 and json.loads(reply.body)["status"] == "OK", reply.text
        reply = request(port, "POST", "/requeue/narrate", {"Referer": f"http://localhost:{port}/0/view/jobs"})
        assert reply.status == 200 and json.loads(reply.body) == {"status": "OK", "count": 1}, reply.text
        assert state(r)["queued"] == [f] and state(r)["jobs"] == [f]
        reply = request(port, "POST", "/queue/narrate/queued/empty", {"Sec-Fetch-Site": "same-origin"})
        assert reply.status == 200, reply.text
        assert state(r)["queued"] == []
        # None of Origin, Referer, Sec-Fetch-Site: a program's request (curl), never a browser's, which
        # sends Origin with every POST: served, as `narrate serve` serves it (one policy, jobs/security.py).
        reply = request(port, "POST", "/queue/narrate/queued/empty", {})
        assert reply.status == 200, reply.text


def test_a_get_never_changes_state(jobs):
    """The rq-dashboard routes /requeue/<queue> for GET too: an <img> or a link on any page would requeue."""
    e, r, a, f = jobs
    before = state(r)
    with dashboard(e) as port:
        for method in ("GET", "HEAD"):
            for headers in ({}, {"Referer": f"http://127.0.0.1:{port}/"}):
                reply = request(port, method, "/requeue/narrate", headers)
                assert reply.status == 405, (method, reply.status, reply.text)
                assert reply.headers.get("allow") == "POST"
        assert state(r) == before


def test_only_the_dashboards_own_host_names_are_served(jobs):
    """A DNS-rebinding page reaches 127.0.0.1 under its own name: that Host is refused (400)."""
    e, r, a, f = jobs
    e = dict(e, NARRATE_DASHBOARD_HOSTS=" narrate.lan, Box.LAN:8080 ,")
    with dashboard(e) as port:
        data = [
            "/",
            "/0/view/jobs",
            f"/0/view/job/{a}",
            "/0/data/queues.json",
            "/0/data/workers.json",
            "/0/data/jobs/narrate/queued/8/asc/1.json",
            f"/0/data/job/{a}.json",
        ]
        bad = [
            f"evil.example:{port}",
            "evil.example",
            f"127.0.0.1.evil.example:{port}",
            f"localhost:{port}.evil",
            f"localhost:{port + 1}",
            "box.lan",
            f"box.lan:{port}",
            "",
            NO_HOST,
        ]
        for path in data:
            for host in bad:
                reply = request(port, "GET", path, host=host)
                _refused(reply, 400)
                assert a.encode() not in reply.body
        good = [
            f"127.0.0.1:{port}",
            f"localhost:{port}",
            f"LOCALHOST:{port}",
            f"[::1]:{port}",
            f"narrate.lan:{port}",
            "narrate.lan",
            "box.lan:8080",
        ]
        for host in good:
            reply = request(port, "GET", f"/0/data/job/{a}.json", host=host)
            assert reply.status == 200 and json.loads(reply.body)["id"] == a, (host, reply.text[:300])
            assert request(port, "GET", "/", host=host).status == 200
        # a good Host does not excuse a cross-site POST
        _refused(request(port, "POST", f"/job/{a}/delete", {"Origin": EVIL}, host="narrate.lan"))
        reply = request(port, "POST", f"/job/{a}/delete", {"Origin": "https://narrate.lan"}, host="narrate.lan")
        assert reply.status == 200, reply.text  # behind a TLS proxy that keeps the Host
        assert a not in state(r)["jobs"]


def test_nothing_is_readable_cross_origin_and_pages_cannot_be_framed(jobs):
    e, r, a, f = jobs
    with dashboard(e) as port:
        json_path = f"/0/data/job/{a}.json"
        cross_fetches = [
            {"Origin": EVIL},  # fetch()/XHR from another origin
            {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "script"},  # <script src>
            {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"},  # localhost:other
            {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"},
        ]
        for headers in cross_fetches:
            for method in ("GET", "OPTIONS"):
                reply = request(port, method, json_path, dict(headers, **{"Access-Control-Request-Method": "GET"}))
                _refused(reply)
                assert a.encode() not in reply.body
                assert not any(k.startswith("access-control-") for k in reply.headers), reply.headers
        # A link from another site still opens the dashboard (a top-level navigation reads nothing).
        nav = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
        page = request(port, "GET", "/", nav)
        assert page.status == 200, page.text[:300]
        own = request(port, "GET", json_path, {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"})
        assert own.status == 200 and json.loads(own.body)["id"] == a
        for reply in (page, own):
            assert not any(k.startswith("access-control-") for k in reply.headers), reply.headers
            assert reply.headers.get("x-frame-options") == "DENY"
            assert "frame-ancestors 'none'" in reply.headers.get("content-security-policy", "")
            assert reply.headers.get("x-content-type-options") == "nosniff"
            assert reply.headers.get("cross-origin-resource-policy") == "same-origin"
        csp = page.headers["content-security-policy"]
        assert "script-src 'self' 'unsafe-eval' 'sha256-" in csp and "'unsafe-inline'" not in csp.split("style-src")[0]


def test_basic_auth_still_works_and_does_not_excuse_a_cross_site_post(jobs):
    """Browsers attach cached basic-auth credentials to cross-site form posts too."""
    e, r, a, f = jobs
    e = dict(e, NARRATE_DASHBOARD_USERNAME="admin", NARRATE_DASHBOARD_PASSWORD="s3cret")

    def auth(user: str = "admin", pw: str = "s3cret") -> dict[str, str]:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()}

    with dashboard(e) as port:
        own = {"Origin": f"http://127.0.0.1:{port}"}
        _refused(request(port, "POST", f"/job/{a}/delete", dict(auth(), Origin=EVIL)))
        _refused(request(port, "GET", "/", auth(), host="evil.example"), 400)
        assert request(port, "POST", f"/job/{a}/delete", own).status == 401
        assert a in state(r)["jobs"]
        for path in ("/", "/0/data/queues.json", f"/0/data/job/{a}.json", "/static/js/jquery-3.5.1.min.js"):
            for headers in ({}, auth(pw="wrong"), auth(user="root")):
                reply = request(port, "GET", path, headers)
                assert reply.status == 401 and "www-authenticate" in reply.headers, (path, reply.status)
                assert a.encode() not in reply.body
            assert request(port, "GET", path, auth()).status == 200
        reply = request(port, "POST", f"/job/{a}/delete", dict(auth(), **own))
        assert reply.status == 200 and json.loads(reply.body)["status"] == "OK", reply.text
        assert a not in state(r)["jobs"]


@pytest.mark.parametrize(
    "args, extra, message",
    [
        (["--bind", "0.0.0.0"], {}, "without a username and password"),
        (["--bind", "::"], {}, "without a username and password"),
        ([], {"NARRATE_DASHBOARD_HOSTS": "http://narrate.lan/"}, "NARRATE_DASHBOARD_HOSTS"),
        ([], {"NARRATE_DASHBOARD_HOSTS": "narrate.lan:port"}, "NARRATE_DASHBOARD_HOSTS"),
        ([], {"NARRATE_DASHBOARD_HOSTS": "*"}, "NARRATE_DASHBOARD_HOSTS"),
    ],
)
def test_unsafe_or_bad_settings_are_refused_at_start(env, external_redis, args, extra, message):
    e = dict(env, **extra)
    proc = subprocess.run(
        [*NARRATE, "dashboard", "--port", str(free_port()), *args],
        env=e,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], proc.stderr
