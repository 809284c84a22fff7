"""What keeps other web pages away from `narrate dashboard` (Flask hooks on narrate's app).

A dashboard on 127.0.0.1 is still reachable by every page the user's browser opens, so:

- Host: only the dashboard's own names are served (loopback names and the bind address, with
  the port, plus NARRATE_DASHBOARD_HOSTS); anything else is 400. This stops DNS rebinding, where
  a page's own name is re-pointed at 127.0.0.1 to read the dashboard as "same-origin".
- Requests that change state (any method but GET/HEAD/OPTIONS) must come from the dashboard's
  own pages: Origin, else Referer, must name one of its hosts, and Sec-Fetch-Site, when sent,
  must be same-origin. A request with no Origin or Referer is refused unless Sec-Fetch-Site
  says same-origin (browsers send Origin with every cross-site POST; scripts such as curl must
  send `Origin: http://127.0.0.1:9181`). rq-dashboard's GET route for "requeue all" is refused.
- Reads: a GET carrying a foreign Origin, or fetched by another site's page rather than opened
  by a top-level navigation (Sec-Fetch-*), is refused; no CORS headers are ever sent.
- Every response forbids framing (clickjacking) and sniffing; HTML pages get a Content Security
  Policy that allows only their own scripts (by hash), so markup in a job's description, result
  or error, which rq-dashboard inserts as HTML, cannot run script.
- Basic auth (NARRATE_DASHBOARD_USERNAME/PASSWORD) covers every route, compared in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from narrate.jobs.errors import BadInput

if TYPE_CHECKING:  # imported where used at run time (flask comes with the dashboard extra)
    from flask import Flask, Response

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
STATE_CHANGING_GETS = frozenset({"rq_dashboard.requeue_all"})  # rq-dashboard routes GET and POST there
_NAME = re.compile(r"^(?:[a-z0-9](?:[a-z0-9_-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9_-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])$")
_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?:\s+type=\"text/javascript\")?\s*>(.*?)</script>", re.S | re.I)
_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


def _split(entry: str) -> tuple[str, int | None]:
    """`name`, `name:port` or `[v6]:port` -> (lower-case name, port or None); ValueError if not one."""
    entry = entry.strip().lower()
    name, sep, port = entry.rpartition(":") if not entry.endswith("]") else (entry, "", "")
    if not sep:
        name, port = entry, ""
    if not _NAME.match(name) or (sep and not (port.isdigit() and 0 < int(port) < 65536)):
        raise ValueError(entry)
    return name, int(port) if sep else None


def allowed_hosts(bind: str, port: int, configured: Iterable[str] = ()) -> frozenset[str]:
    """Host header values the dashboard answers: each name with the port; a configured name without
    a port also bare (a reverse proxy on the default port); loopback and bind bare on port 80."""
    hosts = set()
    for name in (*LOOPBACK_NAMES, _bracketed(bind.strip().lower())):
        hosts.add(f"{name}:{port}")
        if port == 80:
            hosts.add(name)
    for entry in configured:
        if not entry.strip():
            continue
        try:
            name, own_port = _split(entry)
        except ValueError:
            raise BadInput(
                f"NARRATE_DASHBOARD_HOSTS: {entry.strip()!r} is not a host name; give names such as "
                "dash.example.com or dash.example.com:8080, separated by commas"
            ) from None
        hosts.update({f"{name}:{own_port}"} if own_port else {name, f"{name}:{port}"})
    return frozenset(hosts)


def _origin_host(url: str) -> str | None:
    """The host[:port] of an Origin or Referer, as a Host header would carry it; None if not http(s)."""
    try:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        name = _bracketed(parts.hostname.lower())
        return f"{name}:{parts.port}" if parts.port is not None else name
    except ValueError:
        return None


def _refuse(status: int, reason: str, **headers: str) -> Response:
    from flask import Response

    return Response(reason + "\n", status, {**headers, **_HEADERS}, mimetype="text/plain")


def install(app: Flask, hosts: frozenset[str], username: str | None = None, password: str | None = None) -> None:
    """Add the checks and headers to `app` (run before rq-dashboard's own hooks and views)."""
    from flask import request

    @app.before_request
    def check_host() -> Response | None:
        host = request.headers.get("Host", "").strip().lower()
        if host not in hosts:
            return _refuse(400, f"Host {host!r} is not served by this dashboard (see NARRATE_DASHBOARD_HOSTS).")
        return None

    if username:

        @app.before_request
        def check_auth() -> Response | None:
            auth = request.authorization
            given = (auth.username or "", auth.password or "") if auth and auth.type == "basic" else ("", "")
            same_user = hmac.compare_digest(given[0].encode(), username.encode())
            if not (hmac.compare_digest(given[1].encode(), (password or "").encode()) and same_user):
                return _refuse(401, "Log in.", **{"WWW-Authenticate": 'Basic realm="narrate dashboard"'})
            return None

    @app.before_request
    def check_same_origin() -> Response | None:
        origin = request.headers.get("Origin")
        fetch_site = request.headers.get("Sec-Fetch-Site")
        if request.method in SAFE_METHODS:
            if request.method != "OPTIONS" and request.endpoint in STATE_CHANGING_GETS:
                return _refuse(405, "Use POST (from the dashboard's own page).", Allow="POST")
            navigation = (
                request.headers.get("Sec-Fetch-Mode") == "navigate"
                and request.headers.get("Sec-Fetch-Dest", "document") == "document"
            )
            if origin is not None and _origin_host(origin) not in hosts:
                return _refuse(403, f"Refused a cross-origin read from {origin}.")
            if fetch_site in ("cross-site", "same-site") and (request.method == "OPTIONS" or not navigation):
                return _refuse(403, "Refused a read made by another site's page.")
            return None
        if fetch_site is not None and fetch_site != "same-origin":
            return _refuse(403, f"Refused a cross-site request (Sec-Fetch-Site: {fetch_site}).")
        source = origin if origin is not None else request.headers.get("Referer")
        if source is None:
            if fetch_site == "same-origin":
                return None
            return _refuse(403, "Refused a request without Origin or Referer: send the dashboard's own Origin.")
        if _origin_host(source) not in hosts:
            return _refuse(403, f"Refused a cross-site request from {source[:100]}.")
        return None

    @app.after_request
    def security_headers(response: Response) -> Response:
        for k, v in _HEADERS.items():
            response.headers.setdefault(k, v)
        for k in [k for k in response.headers.keys() if k.lower().startswith("access-control-")]:
            del response.headers[k]
        if response.mimetype == "text/html" and not response.direct_passthrough:
            response.headers["Content-Security-Policy"] = _page_policy(response.get_data(as_text=True))
        else:
            response.headers["Content-Security-Policy"] = "default-src 'none'; frame-ancestors 'none'"
        return response


def _page_policy(html: str) -> str:
    """A CSP for one rq-dashboard page: its own files and inline scripts (by hash) only. Underscore's
    templates compile with `new Function`, hence 'unsafe-eval'; injected markup still cannot run
    script (event-handler attributes and injected <script> elements need 'unsafe-inline')."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(s.replace("\r\n", "\n").encode()).digest()).decode() + "'"
        for s in _INLINE_SCRIPT.findall(html)
    )
    return (
        f"default-src 'self'; script-src 'self' 'unsafe-eval' {hashes}; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
