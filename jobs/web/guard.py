"""What keeps other web pages, other hosts' names and unknown callers away from `narrate serve`: one
ASGI middleware around every route (the rules of the dashboard's guard, jobs/dashboard/guard.py,
for an API that scripts and SDKs call too).

- Host: only the server's own names (loopback names and the bind address, with the port, plus
  NARRATE_SERVE_HOSTS); anything else is 400 (DNS rebinding).
- The key: once NARRATE_API_KEY is set, every request needs ``Authorization: Bearer KEY``
  (compared in constant time), on loopback too, or the pages' session cookie that the login form
  sets (an HMAC of the key: HttpOnly, SameSite=Strict); 401 otherwise, and a page opened in a
  browser is sent to /login. The login form and the pages' static files need neither, nor do
  podcast feeds, whose URLs carry each feed's token instead (jobs/web/feeds.py). Off
  loopback the server does not start without a key (jobs/web/app.py).
- Origin: a request that changes state (any method but GET/HEAD/OPTIONS) carrying an Origin (else
  a Referer) of another site, or ``Sec-Fetch-Site`` other than same-origin, is 403; one with
  neither (curl, the openai SDK: not a browser) is served. A read carrying a foreign Origin, or
  fetched by another site's page (not a top-level navigation), is 403. No CORS headers, ever.
- Bodies: a declared body over its cap is 413 before it is read; a body that stalls longer than
  NARRATE_SERVE_STALL_S between pieces is 408 (a slow client holds nothing for long).
- Every response forbids framing and sniffing and carries a Content Security Policy.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import quote, urlsplit

from narrate.jobs.dashboard.guard import allowed_hosts
from narrate.jobs.errors import BadInput
from narrate.jobs.web.errors import body
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
HEADERS = {
    b"x-frame-options": b"DENY",
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"same-origin",
    b"cross-origin-resource-policy": b"same-origin",
}
API_POLICY = b"default-src 'none'; frame-ancestors 'none'"
SESSION_COOKIE = "narrate_session"
PUBLIC_PATHS = ("/login", "/static/", "/feeds/")  # the login form and what it loads; feeds (a token in the URL)
API_PATHS = ("/v1/", "/openapi.json", "/docs")


def session_token(api_key: str) -> str:
    """The pages' session cookie for `api_key` (changing the key logs every browser out)."""
    return hmac.new(api_key.encode(), b"narrate page session", hashlib.sha256).hexdigest()


def _cookie(header: str, name: str) -> str:
    """One cookie of a Cookie header, however malformed the others are (another app on localhost
    may set any cookie: the standard library's strict parser would then drop them all)."""
    return cookie_parser(header).get(name, "")


def is_loopback(bind: str) -> bool:
    return bind.strip().lower() in LOOPBACK or bind.startswith("127.")


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


class Guard:
    """The ASGI middleware (see the module docstring); `multipart_cap`: the largest multipart body
    (each part has its own cap, jobs/web/uploads.py)."""

    def __init__(self, app: App, hosts: frozenset[str], api_key: str | None, stall_s: float,
                 multipart_cap: int, policies: dict[str, bytes] | None = None) -> None:  # fmt: skip
        self.app = app
        self.hosts = hosts
        self.key = f"Bearer {api_key}".encode() if api_key else None
        self.session = session_token(api_key).encode() if api_key else None
        self.stall_s = stall_s
        self.multipart_cap = multipart_cap
        self.policies = policies or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refused = self.check(scope["method"], headers, scope["path"])
        if refused is not None:
            await _reply(send, *refused)
            return
        cap, hint = self._cap(scope["path"], headers)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            await _reply(send, 413, BodyTooLarge(cap, hint).detail)
            return
        policy = self.policies.get(scope["path"], API_POLICY)
        await self.app(scope, self._receive(receive, cap, hint), _secured(send, policy))

    def check(self, method: str, headers: dict[str, str], path: str = "/") -> tuple[int, str, dict[str, str]] | None:
        """(status, message, headers) of a refusal, or None to serve the request."""
        host = headers.get("host", "").strip().lower()
        if host not in self.hosts:
            return 400, f"Host {host[:100]!r} is not served here (add it to NARRATE_SERVE_HOSTS)", {}
        if self.key is not None and not path.startswith(PUBLIC_PATHS) and not self._signed_in(headers):
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

    def _signed_in(self, headers: dict[str, str]) -> bool:
        assert self.key is not None and self.session is not None
        given = headers.get("authorization", "").strip().encode()
        if given and hmac.compare_digest(given, self.key):
            return True
        cookie = _cookie(headers.get("cookie", ""), SESSION_COOKIE).encode()
        return bool(cookie) and hmac.compare_digest(cookie, self.session)

    def _cap(self, path: str, headers: dict[str, str]) -> tuple[int, str]:
        if headers.get("content-type", "").lower().startswith("multipart/form-data"):
            return self.multipart_cap, ""
        return JSON_BODY_CAP, " (a long text is narrated by POST /v1/narrations)" if path == "/v1/audio/speech" else ""

    def _receive(self, receive: Receive, cap: int, hint: str) -> Receive:
        seen, complete = 0, False

        async def bounded() -> Message:
            nonlocal seen, complete
            if complete:  # afterwards only http.disconnect comes (a stream waits for it): no deadline
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.stall_s)
            except TimeoutError:
                raise Stalled(self.stall_s) from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                complete = not message.get("more_body", False)
                if seen > cap:
                    raise BodyTooLarge(cap, hint)
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
