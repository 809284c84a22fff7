"""What a page's form action said (done, or what went wrong), shown once on the page it redirects
to. The words never travel in the URL, where anyone could write a link that shows their own text
on this server's page (phishing): the server keeps them in Redis under a random token for a few
minutes, and the browser holds the token in a cookie (HttpOnly, SameSite=Strict) that the next page
reads and clears. A link or a query string can set neither. An error is worded for the pages
(`words_of`): where the command line's words name a flag or a command, the page names its own
control, chosen by the error's class and facts (jobs/errors.py), never by reading its message."""

from __future__ import annotations

import contextlib
import json
import secrets

import redis
from narrate.jobs.queue.cancel import JobEnded
from narrate.jobs.server.store import PREFIX
from narrate.jobs.voices.voice_library import VoiceExists, VoiceInUse
from narrate.jobs.web.errors import in_use, message_of
from starlette.requests import Request
from starlette.responses import Response

COOKIE = "narrate_flash"
TTL_S = 300  # the page after an action loads at once; a token left over is gone in minutes
MAX_CHARS = 2000


def _key(token: str) -> str:
    return f"{PREFIX}flash:{token}"


def keep(r: redis.Redis, response: Response, secure: bool, said: str | None = None, error: str | None = None) -> None:
    """Keep `said` and `error` for the next page this browser loads (set on `response`, a redirect)."""
    words = {k: v[:MAX_CHARS] for k, v in (("said", said), ("error", error)) if v}
    if not words:
        return
    token = secrets.token_urlsafe(18)
    r.set(_key(token), json.dumps(words), ex=TTL_S)
    response.set_cookie(COOKIE, token, max_age=TTL_S, path="/", httponly=True, samesite="strict", secure=secure)


def take(r: redis.Redis, request: Request) -> dict[str, str | None]:
    """What the last action said (once: the words are removed), or nothing."""
    token = request.cookies.get(COOKIE, "")
    words: dict[str, str] = {}
    if token and len(token) <= 64:
        with r.pipeline(transaction=True) as p:
            p.get(_key(token))
            p.delete(_key(token))
            raw, _ = p.execute()
        with contextlib.suppress(ValueError, TypeError):
            words = json.loads(raw) if raw else {}
    if not isinstance(words, dict):
        words = {}
    return {"said": _text(words.get("said")), "error": _text(words.get("error"))}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def clear(request: Request, response: Response) -> None:
    """Remove the cookie once a page has shown what it pointed to."""
    if COOKIE in request.cookies:
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")


def words_of(e: BaseException) -> str:
    """An action's error as a page says it."""
    if isinstance(e, VoiceInUse):
        return in_use(e, "tick 'remove anyway' to remove it")
    if isinstance(e, VoiceExists):
        return f"a voice named {e.facts['name']!r} exists; choose another name, or rename or remove that one first"
    if isinstance(e, JobEnded):
        job_id, state = e.facts["job_id"], e.facts["state"]
        again = " (resume runs it again)" if state == "failed" else ""
        return f"{job_id} already {state}: there is nothing to cancel{again}"
    return message_of(e)
