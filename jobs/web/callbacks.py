"""A narration's `callback_url`: one POST of the narration object when it reaches a terminal state
(completed, failed, cancelled), only to hosts listed in NARRATE_CALLBACK_HOSTS (none by default: the
API is no way to make the server send requests to hosts of the caller's choosing).

Pending callbacks live in Redis (``narrate:callbacks``: job id -> URL), so a restarted server, or
another one, still sends them; each server's loop checks them every second and the one whose HDEL
removes the entry sends it: once, whatever the number of servers. No redirect is followed."""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import redis
from narrate.jobs.errors import JobNotFound
from narrate.jobs.server.store import PREFIX
from narrate.jobs.web import outputs, views
from narrate.jobs.web.errors import ApiError
from narrate.jobs.web.state import Web

KEY = f"{PREFIX}callbacks"
_ENTRY = re.compile(r"^\[?([^\[\]]+?)\]?(?::(\d+))?$")  # name, name:port, [v6]:port
TIMEOUT_S = 10.0
log = logging.getLogger("narrate.serve")


def _host_port(url: str) -> tuple[str, int, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.hostname.lower(), port, parts.scheme


def allowed(url: str, hosts: Iterable[str]) -> bool:
    """`url`'s host is listed (`name` on any port, or `name:port` exactly; IPv6 in brackets)."""
    try:
        name, port, _ = _host_port(url)
    except ValueError:
        return False
    for entry in hosts:
        m = _ENTRY.match(entry.strip().lower())
        if m and m.group(1) == name and (m.group(2) is None or int(m.group(2)) == port):
            return True
    return False


def check(url: str | None, hosts: Iterable[str]) -> str | None:
    """The callback URL, if allowed (raises ApiError 400 saying what to do otherwise)."""
    if url is None:
        return None
    if len(url) > 2000 or any(ord(c) < 33 for c in url):
        raise ApiError(400, "callback_url is not a URL (at most 2,000 characters, no spaces)", "callback_url")
    try:
        _host_port(url)
    except ValueError:
        raise ApiError(400, "callback_url must be an http:// or https:// URL", "callback_url") from None
    if not allowed(url, hosts):
        listed = ", ".join(hosts) or "none"
        raise ApiError(
            400,
            f"callback_url's host is not one the server may call (allowed: {listed}); the server's operator lists "
            "hosts in NARRATE_CALLBACK_HOSTS",
            "callback_url",
        )
    return url


def store(r: redis.Redis, job_ids: list[str], url: str) -> None:
    r.hset(KEY, mapping=dict.fromkeys(job_ids, url))


def forget(r: redis.Redis, job_id: str) -> None:
    r.hdel(KEY, job_id)


def post(url: str, payload: dict[str, Any]) -> int:
    """One POST of `payload` as JSON; its status code (no redirect followed)."""
    name, port, scheme = _host_port(url)
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    conn = kind(name, port, timeout=TIMEOUT_S)
    try:
        body = json.dumps(payload).encode()
        conn.request("POST", target, body, {"Content-Type": "application/json", "User-Agent": "narrate"})
        return conn.getresponse().status
    finally:
        conn.close()


def send_due(web: Web) -> int:
    """Send the callbacks of narrations that ended (each once); how many were sent."""
    r, sent = web.redis, 0
    for raw_id, raw_url in r.hgetall(KEY).items():
        job_id, url = outputs.text(raw_id), outputs.text(raw_url)
        try:
            payload = views.narration(r, web.settings, job_id)
        except JobNotFound:
            forget(r, job_id)
            continue
        if payload["status"] not in views.TERMINAL or not r.hdel(KEY, job_id):
            continue  # running, or another server took it
        if not allowed(url, web.settings.callback_hosts):
            log.warning("callback of %s not sent: %s is no longer in NARRATE_CALLBACK_HOSTS", job_id, url)
            continue
        try:
            log.info("callback of %s to %s: HTTP %s", job_id, url, post(url, payload))
            sent += 1
        except (OSError, http.client.HTTPException) as e:
            log.warning("callback of %s to %s failed: %s", job_id, url, e)
    return sent


async def loop(web: Web, every_s: float = 1.0) -> None:
    """Send due callbacks until cancelled (the server's lifespan runs it)."""
    while True:
        await asyncio.sleep(every_s)
        try:
            await asyncio.to_thread(send_due, web)
        except redis.RedisError as e:
            log.warning("callbacks: the Redis server did not answer (%s)", e)
