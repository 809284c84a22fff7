"""What keeps other web pages, other hosts' names and unknown callers away from `narrate serve`: one
ASGI middleware around every route. Who may ask what is decided by the one security policy
(jobs/security.py, the same rules as `narrate dashboard`'s guard); this is its adapter for the web
(the key, a session cookie, the refusals as the API's JSON errors), and it bounds bodies and counts
submissions.

- Host: only the server's own names (loopback names and the bind address, with the port, plus
  NARRATE_SERVE_HOSTS); anything else is 400 (DNS rebinding).
- The key: once NARRATE_API_KEY is set, every request needs ``Authorization: Bearer KEY`` (the
  scheme in any case, the key compared in constant time), on loopback too, or the cookie of a
  session the login form started (jobs/web/sessions.py: kept in Redis, with an expiry, ended by
  signing out; HttpOnly, SameSite=Strict); 401 otherwise, and a page opened in a browser is sent
  to /login. An address that sent 5 wrong keys in a minute (here or to the login form) is answered
  429 for the rest of that minute whatever key it sends (jobs/web/limits.py). The login form and
  the pages' static files need neither, nor do podcast feeds, whose URLs carry each feed's token
  instead (jobs/web/feed_routes.py). Off loopback the server does not start without a key
  (jobs/web/app.py). Websocket requests are refused (there is no websocket route). The routes
  declare the same (jobs/web/auth.py), so the OpenAPI document shows the schemes.
- Origin: a request that changes state (any method but GET/HEAD/OPTIONS) carrying an Origin (else
  a Referer) of another site, or ``Sec-Fetch-Site`` other than same-origin, is 403; one with
  none of them (curl, the openai SDK: not a browser) is served. A read carrying a foreign Origin, or
  fetched by another site's page (not a top-level navigation), is 403. No CORS headers, ever.
- Bodies: only the upload routes (UPLOAD_ROUTES) take a large body (multipart, within
  MULTIPART_CAP), and only after the key was checked; the speech endpoint takes a JSON body of up to
  8 MiB; every other route, the login form included, 64 KiB. A declared body over its cap is 413
  before a byte of it is read, a streamed one as soon as it passes the cap. A body that stalls
  longer than NARRATE_SERVE_STALL_S between pieces, that averages under NARRATE_SERVE_MIN_RATE_KIB
  once its first NARRATE_SERVE_STALL_S are past, or that takes longer than NARRATE_SERVE_BODY_S in
  all (a small body, SMALL_BODY_CAP: SMALL_BODY_S), is 408 (a slow client holds nothing for long;
  what it uploaded is removed, jobs/web/uploads.py).
- Submissions: the routes that make work (SUBMIT_ROUTES, and a narration's redo: REDO_PATH) take
  NARRATE_SERVE_SUBMITS_PER_MIN requests a minute from one address; 429 with Retry-After past it.
- Every response forbids framing and sniffing and carries a Content Security Policy.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from narrate.jobs import security
from narrate.jobs.security import Credential, Decision, Reason, Site, decide, is_loopback
from narrate.jobs.web.errors import ApiError, body
from narrate.jobs.web.limits import Limits, client_of
from starlette.exceptions import HTTPException
from starlette.requests import cookie_parser

__all__ = ["BodyRules", "Guard", "is_loopback", "served_hosts"]  # is_loopback: jobs/security.py's

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

JSON_BODY_CAP = 8 << 20  # a JSON request: the speech body, 4,096 characters and perhaps a sample as a data: URL
SMALL_BODY_CAP = 64 << 10  # every other route: a login, a button's form, a small JSON body
SMALL_BODY_S = 5.0  # ... which arrives whole within this (64 KiB in 5 s is 13 KiB/s): a trickle holds nothing long
UPLOAD_ROUTES = frozenset({"/v1/narrations", "/v1/audio/voices", "/new", "/new/inspect", "/voices/add"})  # POST
SUBMIT_ROUTES = UPLOAD_ROUTES | {"/v1/audio/speech", "/voices/design"}  # POST: each one makes work
REDO_PATH = re.compile(r"/(?:v1/narrations|jobs)/[^/]+/redo")  # POST: a redo (jobs/web/redo_routes.py) makes work too
HEADERS = {
    b"x-frame-options": b"DENY",
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"same-origin",
    b"cross-origin-resource-policy": b"same-origin",
}
API_POLICY = b"default-src 'none'; frame-ancestors 'none'"
SESSION_COOKIE = "narrate_session"
BEARER = 'Bearer realm="narrate"'  # the 401's WWW-Authenticate
WRONG_KEY_DELAY_S = 1.0  # a wrong key waits (the login form's too): guessing by hand is slow
PUBLIC_PATHS = ("/login", "/static/", "/feeds/")  # the login form and what it loads; feeds (a token in the URL)
API_PATHS = ("/v1/", "/openapi.json", "/docs")
SIGNED_IN_STATE = "narrate.signed_in"  # in the scope's state: the guard checked its key or session (jobs/web/auth.py)


def _cookie(header: str, name: str) -> str:
    """One cookie of a Cookie header, however malformed the others are (another app on localhost
    may set any cookie: the standard library's strict parser would then drop them all)."""
    return cookie_parser(header).get(name, "")


def served_hosts(bind: str, port: int, configured: Iterable[str] = ()) -> frozenset[str]:
    return security.served_hosts(bind, port, configured, "NARRATE_SERVE_HOSTS")


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

    def __init__(
        self,
        app: App,
        hosts: frozenset[str],
        api_key: str | None,
        body_rules: BodyRules,
        multipart_cap: int,
        policies: dict[str, bytes] | None = None,
        session_valid: Callable[[str], bool] | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.app = app
        self.hosts = hosts
        self.key = api_key.encode() if api_key else None
        self.body_rules = body_rules
        self.multipart_cap = multipart_cap
        self.policies = policies or {}
        self.session_valid = session_valid or (lambda _token: False)
        self.limits = limits or Limits(60, 16)
        self.site = Site(hosts, self.key is not None, PUBLIC_PATHS, API_PATHS, "/login")

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
            if refused is None and method == "POST" and (path in SUBMIT_ROUTES or REDO_PATH.fullmatch(path)):
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
        # what the routes' declared security (jobs/web/auth.py) reads: the key or session checked here
        scope.setdefault("state", {})[SIGNED_IN_STATE] = self.key is not None and not path.startswith(PUBLIC_PATHS)
        cap, hint = self._cap(method, path, headers)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            await _reply(send, 413, BodyTooLarge(cap, hint).detail)
            return
        policy = self.policies.get(path, API_POLICY)
        await self.app(scope, self._receive(receive, cap, hint), _secured(send, policy))

    def check(
        self, method: str, headers: dict[str, str], path: str = "/", client: str = "unknown"
    ) -> tuple[int, str, dict[str, str]] | None:
        """(status, message, headers) of a refusal, or None to serve the request (`client`: its address,
        for the wrong-key limit). Raises ApiError 429 for an address that sent too many wrong keys."""
        decision = decide(self.site, method, path, headers, lambda: self.credential(headers, client))
        return None if decision.allowed else refusal(decision)

    def credential(self, headers: dict[str, str], client: str) -> Credential:
        """What the request carries: the key or a live session's cookie (raises ApiError 429 for an
        address that sent too many wrong keys and sends a wrong one again: the right key always passes, so that
        people behind one proxy address are not locked out by someone guessing there)."""
        assert self.key is not None
        cookie = _cookie(headers.get("cookie", ""), SESSION_COOKIE)
        if cookie and self.session_valid(cookie):
            return Credential.VALID
        sent = headers.get("authorization", "").strip()
        given = _key_of(sent)
        if not given:
            return Credential.WRONG if sent else Credential.NONE
        if hmac.compare_digest(given.encode(), self.key):  # the right key is never refused, whoever guessed before
            return Credential.VALID
        if self.limits.wrong_keys.wait_s(client) > 0:
            raise self.wrong_keys_refusal(client)
        self.limits.wrong_keys.record(client)
        return Credential.WRONG

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
        if cap <= SMALL_BODY_CAP:  # a small body (a login form, a button) has a few seconds, not an hour
            rules = BodyRules(min(rules.stall_s, SMALL_BODY_S), rules.min_rate, min(rules.total_s, SMALL_BODY_S))

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


def refusal(decision: Decision) -> tuple[int, str, dict[str, str]]:
    """A refusal of the policy in the API's words: (status, message, headers)."""
    said, reason = decision.said, decision.reason
    if reason is Reason.HOST:
        return 400, f"Host {said[:100]!r} is not served here (add it to NARRATE_SERVE_HOSTS)", {}
    if reason is Reason.SIGN_IN:
        return 303, "sign in first: /login", {"location": decision.location or "/login"}
    if reason in (Reason.NO_CREDENTIALS, Reason.WRONG_CREDENTIALS):
        given = "a wrong API key" if reason is Reason.WRONG_CREDENTIALS else "no API key"
        return 401, f"{given}: send Authorization: Bearer KEY (NARRATE_API_KEY)", {"www-authenticate": BEARER}
    if reason is Reason.CROSS_ORIGIN_READ:
        return 403, f"refused a cross-origin read from {said[:100]}", {}
    if reason is Reason.CROSS_SITE_READ:
        return 403, "refused a read made by another site's page", {}
    if reason is Reason.CROSS_SITE_FETCH:
        return 403, f"refused a cross-site request (Sec-Fetch-Site: {said[:40]})", {}
    return 403, f"refused a cross-site request from {said[:100]}", {}


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
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
