"""What keeps other web pages away from `narrate dashboard` (Flask hooks on narrate's app): the
adapter of the one security policy (jobs/security.py, the same rules as `narrate serve`'s guard),
plus what only the dashboard needs.

A dashboard on 127.0.0.1 is still reachable by every page the user's browser opens, so:

- Host: only the dashboard's own names are served (loopback names and the bind address, with the
  port, plus NARRATE_DASHBOARD_HOSTS); anything else is 400 (DNS rebinding).
- Basic auth (NARRATE_DASHBOARD_USERNAME/PASSWORD) covers every route, compared in constant time;
  off loopback the dashboard does not start without it (jobs/dashboard/app.py).
- Requests that change state (any method but GET/HEAD/OPTIONS) from another site are refused: an
  Origin, else a Referer, naming another host, or Sec-Fetch-Site other than same-origin. One with
  none of them is a program's (curl), not a browser's, and is served (browsers send Origin with
  every POST). rq-dashboard's GET route for "requeue all" is refused (405).
- Reads: a GET carrying a foreign Origin, or fetched by another site's page rather than opened
  by a top-level navigation (Sec-Fetch-*), is refused; no CORS headers are ever sent.
- Every response forbids framing (clickjacking) and sniffing; HTML pages get a Content Security
  Policy that allows only their own scripts (by hash), so markup in a job's description, result
  or error, which rq-dashboard inserts as HTML, cannot run script.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from typing import TYPE_CHECKING

from narrate.jobs.security import Credential, Decision, Reason, Site, decide

if TYPE_CHECKING:  # imported where used at run time (flask comes with the dashboard extra)
    from flask import Flask, Response

STATE_CHANGING_GETS = frozenset({"rq_dashboard.requeue_all"})  # rq-dashboard routes GET and POST there
_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?:\s+type=\"text/javascript\")?\s*>(.*?)</script>", re.S | re.I)
_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
BASIC_CHALLENGE = 'Basic realm="narrate dashboard"'


def _refuse(status: int, reason: str, **headers: str) -> Response:
    from flask import Response

    return Response(reason + "\n", status, {**headers, **_HEADERS}, mimetype="text/plain")


def credential(authorization: tuple[str, str] | None, username: str, password: str) -> Credential:
    """Basic auth's (username, password) as sent (None: none sent), compared in constant time."""
    if authorization is None:
        return Credential.NONE
    same_user = hmac.compare_digest(authorization[0].encode(), username.encode())
    same_password = hmac.compare_digest(authorization[1].encode(), password.encode())
    return Credential.VALID if same_user and same_password else Credential.WRONG


def refusal(decision: Decision) -> Response:
    """A refusal of the policy, in the dashboard's words (plain text)."""
    said, reason = decision.said, decision.reason
    if reason is Reason.HOST:
        return _refuse(400, f"Host {said!r} is not served by this dashboard (see NARRATE_DASHBOARD_HOSTS).")
    if reason in (Reason.NO_CREDENTIALS, Reason.WRONG_CREDENTIALS, Reason.SIGN_IN):
        return _refuse(401, "Log in.", **{"WWW-Authenticate": BASIC_CHALLENGE})
    if reason is Reason.CROSS_ORIGIN_READ:
        return _refuse(403, f"Refused a cross-origin read from {said[:100]}.")
    if reason is Reason.CROSS_SITE_READ:
        return _refuse(403, "Refused a read made by another site's page.")
    if reason is Reason.CROSS_SITE_FETCH:
        return _refuse(403, f"Refused a cross-site request (Sec-Fetch-Site: {said[:40]}).")
    return _refuse(403, f"Refused a cross-site request from {said[:100]}.")


def install(app: Flask, hosts: frozenset[str], username: str | None = None, password: str | None = None) -> None:
    """Add the checks and headers to `app` (run before rq-dashboard's own hooks and views)."""
    from flask import request

    site = Site(hosts, credentials_required=bool(username))

    def sent() -> Credential:
        auth = request.authorization
        given = (auth.username or "", auth.password or "") if auth and auth.type == "basic" else None
        if given is None and request.headers.get("Authorization"):
            return Credential.WRONG
        return credential(given, username or "", password or "")

    @app.before_request
    def check() -> Response | None:
        headers = {k.lower(): v for k, v in request.headers.items()}
        decision = decide(site, request.method, request.path, headers, sent)
        if not decision.allowed:
            return refusal(decision)
        if request.method in ("GET", "HEAD") and request.endpoint in STATE_CHANGING_GETS:
            return _refuse(405, "Use POST (from the dashboard's own page).", Allow="POST")
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
