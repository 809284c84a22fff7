"""What keeps other web pages, other hosts' names and unknown callers away from `narrate serve`: one
ASGI middleware around every route (the rules of the dashboard's guard, jobs/dashboard/guard.py,
for an API that scripts and SDKs call too).

- Host: only the server's own names (loopback names and the bind address, with the port, plus
  NARRATE_SERVE_HOSTS); anything else is 400 (DNS rebinding).
- The key: once NARRATE_API_KEY is set, every request needs ``Authorization: Bearer KEY`` (the
  scheme in any case, the key compared in constant time), on loopback too, or the cookie of a
  session the login form started (jobs/web/sessions.py: kept in Redis, with an expiry, ended by
  signing out; HttpOnly, SameSite=Strict); 401 otherwise, and a page opened in a browser is sent
  to /login. An address that sent 5 wrong keys in a minute (here or to the login form) is answered
  429 for the rest of that minute whatever key it sends (jobs/web/limits.py). The login form and
  the pages' static files need neither, nor do podcast feeds, whose URLs carry each feed's token
  instead (jobs/web/feeds.py). Off loopback the server does not start without a key
  (jobs/web/app.py). Websocket requests are refused (there is no websocket route).
- Origin: a request that changes state (any method but GET/HEAD/OPTIONS) carrying an Origin (else
  a Referer) of another site, or ``Sec-Fetch-Site`` other than same-origin, is 403; one with
  neither (curl, the openai SDK: not a browser) is served. A read carrying a foreign Origin, or
  fetched by another site's page (not a top-level navigation), is 403. No CORS headers, ever.
- Bodies: only the upload routes (UPLOAD_ROUTES) take a large body (multipart, within
  MULTIPART_CAP), and only after the key was checked; the speech endpoint takes a JSON body of up to
  8 MiB; every other route, the login form included, 64 KiB. A declared body over its cap is 413
  before a byte of it is read, a streamed one as soon as it passes the cap. A body that stalls
  longer than NARRATE_SERVE_STALL_S between pieces, that averages under NARRATE_SERVE_MIN_RATE_KIB
  once its first NARRATE_SERVE_STALL_S are past, or that takes longer than NARRATE_SERVE_BODY_S in
  all, is 408 (a slow client holds nothing for long; what it uploaded is removed,
  jobs/web/uploads.py).
- Submissions: the routes that make work (SUBMIT_ROUTES) take NARRATE_SERVE_SUBMITS_PER_MIN
  requests a minute from one address; 429 with Retry-After past it.
- Every response forbids framing and sniffing and carries a Content Security Policy.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from narrate.jobs.dashboard.guard import allowed_hosts
from narrate.jobs.errors import BadInput
from narrate.jobs.web.errors import ApiError, body
from narrate.jobs.web.limits import Limits, client_of
from starlette.exceptions import HTTPException
from starlette.requests import cookie_parser

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
JSON_BODY_CAP = 8 << 20  # a JSON request: the speech body, 4,096 characters and perhaps a sample as a data: URL
SMALL_BODY_CAP = 64 << 10  # every other route: a login, a button's form, a small JSON body
UPLOAD_ROUTES = frozenset({"/v1/narrations", "/v1/audio/voices", "/new", "/new/inspect", "/voices/add"})  # POST
SUBMIT_ROUTES = UPLOAD_ROUTES | {"/v1/audio/speech", "/voices/design"}  # POST: each one makes work
HEADERS = {
    b"x-frame-options": b"DENY",
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"same-origin",
    b"cross-origin-resource-policy": b"same-origin",
}
API_POLICY = b"default-src 'none'; frame-ancestors 'none'"
SESSION_COOKIE = "narrate_session"
WRONG_KEY_DELAY_S = 1.0  # a wrong key waits (the login form's too): guessing by hand is slow
PUBLIC_PATHS = ("/login", "/static/", "/feeds/")  # the login form and what it loads; feeds (a token in the URL)
API_PATHS = ("/v1/", "/openapi.json", "/docs")


def _cookie(header: str, name: str) -> str:
    """One cookie of a Cookie header, however malformed the others are (another app on localhost
    may set any cookie: the standard library's strict parser would then drop them all)."""
    return cookie_parser(header).get(name, "")


def is_loopback(bind: str) -> bool:
    """`bind` is a loopback address: localhost, or an IP address in 127.0.0.0/8 or ::1 (a name that
    merely begins with 127., such as 127.evil.example, is not)."""
    name = bind.strip().lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False


def served_hosts(bind: str, port: int, configured: Iterable[str] = ()) -> frozenset[str]:
    try:
        return allowed_hosts(bind, port, configured)
    except BadInput as e:
        raise BadInput(str(e).replace("NARRATE_DASHBOARD_HOSTS", "NARRATE_SERVE_HOSTS")) from None


def origin_host(url: str) -> str | None:
    """The host[:port] of an Origin or Referer, as a Host header carries it; None if not http(s)."""
    try:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        name = parts.hostname.lower()
        name = f"[{name}]" if ":" in name else name
        return f"{name}:{parts.port}" if parts.port is not None else name
    except ValueError:
        return None


class BodyTooLarge(HTTPException):  # an HTTPException: FastAPI passes it on from a body it is reading
    def __init__(self, cap: int, hint: str):
        super().__init__(413, f"the request body is over {cap // 1024} KiB, the limit here{hint}")


class Stalled(HTTPException):
    def __init__(self, stall_s: float):
        super().__init__(408, f"the request body stalled for {stall_s:g} s; send it again without pausing")


class TooSlow(HTTPException):
    def __init__(self, said: str):
        super().__init__(408, f"the request body {said}; send it again over a faster connection")


@dataclass(frozen=True)
class BodyRules:
    """How long a request body may take: `stall_s` between pieces; an average of `min_rate` bytes a
    second once `stall_s` are past; `total_s` in all."""

    stall_s: float = 30.0
    min_rate: int = 32 << 10
    total_s: float = 3600.0


def _key_of(authorization: str) -> str | None:
    """The token of an Authorization header (the Bearer scheme in any case), None for another scheme."""
    scheme, _, token = authorization.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


class Guard:
    """The ASGI middleware (see the module docstring). `multipart_cap`: the largest multipart body
    (each part has its own cap, jobs/web/uploads.py); `session_valid`: whether a session cookie's
    token is a live session of this server (jobs/web/sessions.py; it may call Redis, so a request
    carrying a cookie is checked in a thread); `limits`: the per-address limits (jobs/web/limits.py)."""

    def __init__(self, app: App, hosts: frozenset[str], api_key: str | None, body_rules: BodyRules,
                 multipart_cap: int, policies: dict[str, bytes] | None = None,
                 session_valid: Callable[[str], bool] | None = None, limits: Limits | None = None) -> None:  # fmt: skip
        self.app = app
        self.hosts = hosts
        self.key = api_key.encode() if api_key else None
        self.body_rules = body_rules
        self.multipart_cap = multipart_cap
        self.policies = policies or {}
        self.session_valid = session_valid or (lambda _token: False)
        self.limits = limits or Limits(60, 16)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # no route takes one: refused before anything is read
            await send({"type": "websocket.close", "code": 1008, "reason": "no websockets here"})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        method, path, client = scope["method"], scope["path"], client_of(scope.get("client"))
        try:
            if self.key is not None and _cookie(headers.get("cookie", ""), SESSION_COOKIE):
                refused = await asyncio.to_thread(self.check, method, headers, path, client)
            else:
                refused = self.check(method, headers, path, client)
            if refused is None and method == "POST" and path in SUBMIT_ROUTES:
                self.limits.submits.take(client, "too many submissions from this address")
        except ApiError as e:
            refused = e.status, e.message, e.headers
        except Exception:  # the session store (Redis) did not answer
            refused = 503, "the server cannot check sessions now (its Redis server did not answer); try again", {}
        if refused is not None:
            if refused[0] == 401 and _key_of(headers.get("authorization", "")):
                await asyncio.sleep(WRONG_KEY_DELAY_S)
            await _reply(send, *refused)
            return
        cap, hint = self._cap(method, path, headers)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            await _reply(send, 413, BodyTooLarge(cap, hint).detail)
            return
        policy = self.policies.get(path, API_POLICY)
        await self.app(scope, self._receive(receive, cap, hint), _secured(send, policy))

    def check(self, method: str, headers: dict[str, str], path: str = "/",
              client: str = "unknown") -> tuple[int, str, dict[str, str]] | None:  # fmt: skip
        """(status, message, headers) of a refusal, or None to serve the request (`client`: its address,
        for the wrong-key limit)."""
        host = headers.get("host", "").strip().lower()
        if host not in self.hosts:
            return 400, f"Host {host[:100]!r} is not served here (add it to NARRATE_SERVE_HOSTS)", {}
        if self.key is not None and not path.startswith(PUBLIC_PATHS) and not self._signed_in(headers, client):
            if method in ("GET", "HEAD") and not path.startswith(API_PATHS) and _is_page_load(headers):
                return 303, "sign in first: /login", {"location": f"/login?next={quote(path[:500], safe='/')}"}
            given = headers.get("authorization", "").strip()
            said = "a wrong API key" if given else "no API key"
            return (
                401,
                f"{said}: send Authorization: Bearer KEY (NARRATE_API_KEY)",
                {"www-authenticate": 'Bearer realm="narrate"'},
            )
        origin, fetch_site = headers.get("origin"), headers.get("sec-fetch-site")
        if method in SAFE_METHODS:
            navigation = headers.get("sec-fetch-mode") == "navigate"
            if origin is not None and origin_host(origin) not in self.hosts:
                return 403, f"refused a cross-origin read from {origin[:100]}", {}
            if fetch_site in ("cross-site", "same-site") and (method == "OPTIONS" or not navigation):
                return 403, "refused a read made by another site's page", {}
            return None
        if fetch_site is not None and fetch_site not in ("same-origin", "none"):
            return 403, f"refused a cross-site request (Sec-Fetch-Site: {fetch_site})", {}
        source = origin if origin is not None else headers.get("referer")
        if source is not None and origin_host(source) not in self.hosts:
            return 403, f"refused a cross-site request from {source[:100]}", {}
        return None

    def _signed_in(self, headers: dict[str, str], client: str) -> bool:
        """The request carries the key or a live session's cookie (raises ApiError 429 for an
        address that sent too many wrong keys and sends one again)."""
        assert self.key is not None
        cookie = _cookie(headers.get("cookie", ""), SESSION_COOKIE)
        if cookie and self.session_valid(cookie):
            return True
        given = _key_of(headers.get("authorization", ""))
        if not given:
            return False
        if self.limits.wrong_keys.wait_s(client) > 0:
            raise self.wrong_keys_refusal(client)
        if hmac.compare_digest(given.encode(), self.key):
            return True
        self.limits.wrong_keys.record(client)
        return False

    def wrong_keys_refusal(self, client: str) -> ApiError:
        from narrate.jobs.web.limits import too_many

        return too_many("too many wrong API keys from this address", self.limits.wrong_keys.wait_s(client))

    def _cap(self, method: str, path: str, headers: dict[str, str]) -> tuple[int, str]:
        if method == "POST" and path in UPLOAD_ROUTES:
            if headers.get("content-type", "").lower().startswith("multipart/form-data"):
                return self.multipart_cap, ""
            return JSON_BODY_CAP, " (send documents as multipart/form-data)"
        if path == "/v1/audio/speech":
            return JSON_BODY_CAP, " (a long text is narrated by POST /v1/narrations)"
        return SMALL_BODY_CAP, ""

    def _receive(self, receive: Receive, cap: int, hint: str) -> Receive:
        seen, complete, started = 0, False, time.monotonic()
        rules = self.body_rules

        async def bounded() -> Message:
            nonlocal seen, complete
            if complete:  # afterwards only http.disconnect comes (a stream waits for it): no deadline
                return await receive()
            left = rules.total_s - (time.monotonic() - started)
            if left <= 0:
                raise TooSlow(f"took longer than {rules.total_s:g} s")
            try:
                message = await asyncio.wait_for(receive(), min(rules.stall_s, left))
            except TimeoutError:
                if left <= rules.stall_s:
                    raise TooSlow(f"took longer than {rules.total_s:g} s") from None
                raise Stalled(rules.stall_s) from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                complete = not message.get("more_body", False)
                if seen > cap:
                    raise BodyTooLarge(cap, hint)
                late = time.monotonic() - started - rules.stall_s
                if not complete and late > 0 and seen < rules.min_rate * late:
                    raise TooSlow(f"came slower than {rules.min_rate // 1024} KiB/s")
            return message

        return bounded


def _is_page_load(headers: dict[str, str]) -> bool:
    """A browser opening a page (not a script's or htmx's request)."""
    if headers.get("hx-request"):
        return False
    return headers.get("sec-fetch-mode") == "navigate" or "text/html" in headers.get("accept", "")


def _secured(send: Send, policy: bytes) -> Send:
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", []) if not k.lower().startswith(b"access-control-")]
            names = {k.lower() for k, _ in kept}
            kept += [(k, v) for k, v in HEADERS.items() if k not in names]
            if b"content-security-policy" not in names:
                kept.append((b"content-security-policy", policy))
            message["headers"] = kept
        await send(message)

    return wrapped


async def _reply(send: Send, status: int, message: str, headers: dict[str, str] | None = None) -> None:
    payload = json.dumps(body(status, message)).encode()
    extra = [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await _secured(send, API_POLICY)(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *extra,
            ],  # fmt: skip
        }
    )
    await send({"type": "http.response.body", "body": payload})
