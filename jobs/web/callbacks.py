"""A narration's `callback_url`: one POST of the narration object when it reaches a terminal state
(completed, failed, cancelled), only to hosts listed in NARRATE_CALLBACK_HOSTS (none by default: the
API is no way to make the server send requests to hosts of the caller's choosing).

Pending callbacks live in Redis (``narrate:callbacks``: job id -> URL), so a restarted server, or
another one, still sends them; each server's loop checks them every second and the one whose HDEL
removes the entry sends it: once, whatever the number of servers. No redirect is followed.

A narration has one callback URL, the first one given (``narrate:callback-url:ID``, kept until the
narration is deleted or expires): the same request again with another `callback_url` is 409 and
changes nothing; with the same one it changes nothing either, except that a narration that runs
again (resumed, rescheduled) has its new end posted. A URL given for a narration that had already
ended without one is 409 too: an ended narration is never posted to a URL given afterwards.

A URL is normalized before it is stored (host through IDNA, path and query percent-encoded, no
fragment; userinfo and bad ports refused). Callbacks are sent concurrently, a few to each host
(`Sender`), so a slow host delays only its own; any error sending one is logged with the narration
and the URL, and stops neither the others nor the loop."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import ipaddress
import json
import logging
import re
from collections import Counter
from collections.abc import Container, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import redis
from narrate.jobs.api.prepare import Request
from narrate.jobs.api.submit import plan
from narrate.jobs.errors import JobNotFound
from narrate.jobs.queue.states import ENDED_API
from narrate.jobs.server.records import find
from narrate.jobs.server.store import PREFIX
from narrate.jobs.settings import DAY_S, Settings
from narrate.jobs.web import outputs, views
from narrate.jobs.web.access_log import redact
from narrate.jobs.web.errors import ApiError
from narrate.jobs.web.state import Web
from rq.job import JobStatus

KEY = f"{PREFIX}callbacks"
BOUND = f"{PREFIX}callback-url:"  # + job id: the narration's callback URL, its first one
RUNS_AGAIN = (None, "resumed", "rescheduled")  # Submitted.duplicate of a run whose end is still to come
_ENTRY = re.compile(r"^\[?([^\[\]]+?)\]?(?::(\d+))?$")  # name, name:port, [v6]:port
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")  # a % that starts no escape: encoded as %25
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"  # RFC 3986 pchar and "/", and the % of existing escapes
_QUERY_SAFE = _PATH_SAFE + "?"
MAX_URL = 2000
TIMEOUT_S = 10.0
ALL_AT_ONCE = 16  # callbacks one server sends at once, to all hosts together
log = logging.getLogger("narrate.serve")


class BadUrl(ValueError):
    """A callback URL that cannot be sent to, and why (the 400's message)."""


def _host(name: str) -> str:
    """A host as it goes on the wire: an IP address in its usual form (IPv6 without brackets), a
    name through IDNA (café.example -> xn--caf-dma.example), lowercase (raises BadUrl)."""
    name = name.strip().lower()
    if ":" in name:
        if "%" in name:
            raise BadUrl("callback_url's host is an IPv6 address with a zone (%...); give the address alone")
        try:
            return str(ipaddress.IPv6Address(name))  # no zone (%eth0): refused with the rest
        except ValueError:
            raise BadUrl("callback_url's host is not a valid IPv6 address") from None
    with contextlib.suppress(ValueError):
        return str(ipaddress.IPv4Address(name))
    try:
        ascii_name = name.removesuffix(".").encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise BadUrl("callback_url's host is not a valid host name") from None
    labels = ascii_name.split(".")
    if len(ascii_name) > 253 or not all(_LABEL.fullmatch(label) for label in labels) or labels[-1].isdigit():
        raise BadUrl("callback_url's host is not a valid host name or IP address (letters, digits, '-' and '.')")
    return ascii_name


def normalize(url: str) -> str:
    """`url` as it is sent and stored: scheme and host lowercase, the host through IDNA, path and
    query percent-encoded (existing %XX escapes kept), no fragment (raises BadUrl saying what is
    wrong: not http(s), userinfo, a bad port or host, spaces or control characters)."""
    if len(url) > MAX_URL or any(ord(c) < 33 or 127 <= ord(c) < 160 for c in url):
        raise BadUrl(f"callback_url is not a URL (at most {MAX_URL:,} characters, no spaces or control characters)")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise BadUrl("callback_url is not a URL (an IPv6 host goes in brackets: http://[::1]:9000/)") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.netloc:
        raise BadUrl("callback_url must be an http:// or https:// URL")
    if "@" in parts.netloc:
        raise BadUrl("callback_url must not hold a user name or password (user@host); put a secret in its path")
    if not parts.hostname:
        raise BadUrl("callback_url must be an http:// or https:// URL with a host")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0 or (port is None and parts.netloc.endswith(":")):
        raise BadUrl("callback_url's port must be a number from 1 to 65535")
    host = _host(parts.hostname)
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port is not None else "")
    try:
        path = quote(_LONE_PERCENT.sub("%25", parts.path), safe=_PATH_SAFE) or "/"
        query = quote(_LONE_PERCENT.sub("%25", parts.query), safe=_QUERY_SAFE)
    except UnicodeError:
        raise BadUrl("callback_url is not valid text (a lone surrogate)") from None
    normal = urlunsplit((scheme, netloc, path, query, ""))
    if len(normal) > MAX_URL:
        raise BadUrl(f"callback_url is too long once percent-encoded (at most {MAX_URL:,} characters)")
    return normal


def _host_port(url: str) -> tuple[str, int, str]:
    """The host (as on the wire), port and scheme of a URL (raises BadUrl)."""
    parts = urlsplit(normalize(url))
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return _host(parts.hostname or ""), port, parts.scheme


def allowed(url: str, hosts: Iterable[str]) -> bool:
    """`url`'s host is listed (`name` on any port, or `name:port` exactly; IPv6 in brackets; a name
    listed in Unicode matches its IDNA form)."""
    try:
        name, port, _ = _host_port(url)
    except BadUrl:
        return False
    for entry in hosts:
        m = _ENTRY.match(entry.strip().lower())
        if not m:
            continue
        try:
            listed = _host(m.group(1))
        except BadUrl:
            continue
        if listed == name and (m.group(2) is None or int(m.group(2)) == port):
            return True
    return False


def check(url: str | None, hosts: Iterable[str]) -> str | None:
    """The callback URL, normalized (`normalize`), if allowed (raises ApiError 400 naming
    callback_url and saying what to do otherwise)."""
    if url is None:
        return None
    try:
        normal = normalize(url)
    except BadUrl as e:
        raise ApiError(400, str(e), "callback_url") from None
    if not allowed(normal, hosts):
        listed = ", ".join(hosts) or "none"
        raise ApiError(
            400,
            f"callback_url's host is not one the server may call (allowed: {listed}); the server's operator lists "
            "hosts in NARRATE_CALLBACK_HOSTS",
            "callback_url",
        )
    return normal


def _bound(r: redis.Redis, job_id: str) -> str | None:
    """The callback URL a narration was given first (one pending from before URLs were bound too)."""
    raw = r.get(BOUND + job_id) or r.hget(KEY, job_id)
    return outputs.text(raw) if raw else None


def _conflict(job_id: str) -> ApiError:
    return ApiError(
        409,
        f"narration {job_id} has another callback_url, given when it was first submitted: a "
        "narration has one callback URL and it stays; submit again with that URL or without "
        "callback_url",
        "callback_url",
    )


def _ended(job_id: str) -> ApiError:
    return ApiError(
        409,
        f"narration {job_id} had already ended, submitted without a callback_url: its end is "
        f"not posted to a URL given afterwards; GET /v1/narrations/{job_id} has it",
        "callback_url",
    )


def check_bound(r: redis.Redis, settings: Settings, requests: list[Request], url: str) -> None:
    """Before anything is enqueued: 409 (naming callback_url) when one of these requests is a
    narration that exists with another callback URL, or that has finished without one."""
    for req in requests:
        job_id = plan(settings, req).job_id
        job = find(r, job_id)
        if job is None:  # a new narration (an expired one's URL goes with it)
            continue
        bound = _bound(r, job_id)
        if bound is not None and bound != url:
            raise _conflict(job_id)
        if bound is None and job.get_status(refresh=False) == JobStatus.FINISHED:
            raise _ended(job_id)


def store(r: redis.Redis, submitted: list[tuple[str, str | None]], url: str) -> None:
    """Bind `url` to each narration just submitted (job id, `Submitted.duplicate`) and arm its
    callback, by the rules of the module's docstring (ApiError 409 naming callback_url)."""
    arm = []
    for job_id, duplicate in submitted:
        bound = None if duplicate is None else _bound(r, job_id)
        if bound is not None and bound != url:
            raise _conflict(job_id)
        if bound is None and duplicate == "done":
            raise _ended(job_id)
        if bound is None:
            if duplicate is None:
                r.set(BOUND + job_id, url)
            elif not r.set(BOUND + job_id, url, nx=True) and _bound(r, job_id) != url:
                raise _conflict(job_id)  # another request bound another URL meanwhile
        if bound is None or duplicate in RUNS_AGAIN:
            arm.append(job_id)
    if arm:
        r.hset(KEY, mapping=dict.fromkeys(arm, url))


def forget(r: redis.Redis, job_id: str) -> None:
    r.hdel(KEY, job_id)
    r.delete(BOUND + job_id)


def post(url: str, payload: dict[str, Any]) -> int:
    """One POST of `payload` as JSON to `url` (normalized first: a URL stored before it was, too);
    its status code (no redirect followed)."""
    name, port, scheme = _host_port(url)
    parts = urlsplit(normalize(url))
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    conn = kind(name, port, timeout=TIMEOUT_S)
    try:
        body = json.dumps(payload).encode()
        conn.request("POST", target, body, {"Content-Type": "application/json", "User-Agent": "narrate"})
        return conn.getresponse().status
    finally:
        conn.close()


@dataclass(frozen=True)
class Due:
    """A narration that ended with a callback pending: its id, URL and the object to post."""

    job_id: str
    url: str
    payload: dict[str, Any]

    @property
    def host(self) -> tuple[str, int]:
        try:
            name, port, _ = _host_port(self.url)
        except BadUrl:
            return "", 0  # sent (and failing) in a bucket of its own
        return name, port


def due(web: Web, skip: Container[str] = ()) -> list[Due]:
    """The pending callbacks whose narration ended (not yet taken; those in `skip` are being sent);
    the entries of narrations that no longer exist are removed."""
    r, found = web.redis, []
    for raw_id, raw_url in r.hgetall(KEY).items():
        job_id, url = outputs.text(raw_id), outputs.text(raw_url)
        if job_id in skip:
            continue
        try:
            payload = views.narration(r, web.settings, job_id)
        except JobNotFound:
            forget(r, job_id)
            continue
        if payload["status"] in ENDED_API:
            found.append(Due(job_id, url, payload))
    return found


def send(web: Web, d: Due) -> bool:
    """Take the callback (the server whose HDEL removes the entry sends it: once in all) and POST it;
    whether it was delivered. A failure is logged with the narration and the URL, not retried."""
    if not web.redis.hdel(KEY, d.job_id):
        return False  # another server took it
    web.redis.expire(BOUND + d.job_id, web.settings.keep_days * DAY_S)  # it goes when the narration expires
    shown = redact(d.url)
    try:
        normalize(d.url)
    except BadUrl as e:  # stored before URLs were checked, or written to Redis by something else
        log.warning("callback of %s to %s not sent: %s", d.job_id, shown, e)
        return False
    if not allowed(d.url, web.settings.callback_hosts):
        log.warning("callback of %s not sent: %s is no longer in NARRATE_CALLBACK_HOSTS", d.job_id, shown)
        return False
    try:
        log.info("callback of %s to %s: HTTP %s", d.job_id, shown, post(d.url, d.payload))
        return True
    except Exception as e:  # noqa: BLE001 - any failure of one callback is its own, logged
        log.warning("callback of %s to %s failed: %s", d.job_id, shown, str(e) or type(e).__name__)
        return False


class Sender:
    """Sends due callbacks concurrently, each in a thread of its own pool: at most
    NARRATE_CALLBACK_HOST_CONCURRENCY to one host (host and port) and ALL_AT_ONCE in all. A callback
    whose host has no free slot stays in Redis (not taken) until one is free, so a slow host delays
    only its own callbacks, and a server that stops meanwhile leaves them for the next."""

    def __init__(self, web: Web, per_host: int | None = None, at_once: int = ALL_AT_ONCE) -> None:
        self.web = web
        self.per_host = per_host or web.settings.callback_host_concurrency
        self.at_once = at_once
        self.busy: Counter[tuple[str, int]] = Counter()
        self.sending: set[str] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.pool = ThreadPoolExecutor(at_once + 1, thread_name_prefix="narrate-callback")  # + 1: the scan

    async def tick(self) -> int:
        """One pass: start sending what is due and has a free slot; how many were started."""
        running = asyncio.get_running_loop()
        found = await running.run_in_executor(self.pool, due, self.web, frozenset(self.sending))
        started = 0
        for d in found:
            host = d.host
            if len(self.sending) >= self.at_once or self.busy[host] >= self.per_host or d.job_id in self.sending:
                continue  # stays in Redis: the next pass with a free slot takes it
            self.busy[host] += 1
            self.sending.add(d.job_id)
            task = asyncio.create_task(self._send(d, host))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            started += 1
        return started

    async def _send(self, d: Due, host: tuple[str, int]) -> None:
        try:
            await asyncio.get_running_loop().run_in_executor(self.pool, send, self.web, d)
        except Exception:  # noqa: BLE001 - e.g. Redis gone while taking it: logged, the loop goes on
            log.exception("callback of %s to %s: not sent", d.job_id, redact(d.url))
        finally:
            self.busy[host] -= 1
            if self.busy[host] <= 0:
                del self.busy[host]
            self.sending.discard(d.job_id)

    def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        self.pool.shutdown(wait=False, cancel_futures=True)


async def loop(web: Web, every_s: float = 1.0) -> None:
    """Send due callbacks until cancelled (the server's lifespan runs it); no error of one pass
    stops the next."""
    sender = Sender(web)
    try:
        while True:
            await asyncio.sleep(every_s)
            try:
                await sender.tick()
            except redis.RedisError as e:
                log.warning("callbacks: the Redis server did not answer (%s)", e)
            except Exception:  # noqa: BLE001 - logged; the next pass is in a second
                log.exception("callbacks: a pass failed")
    finally:
        sender.close()
