"""Signing in to the pages once NARRATE_API_KEY is set: a form that takes the key, starts a session
(jobs/web/sessions.py: kept in Redis, expiring) and sets its cookie (HttpOnly, SameSite=Strict, for
this server's paths, Secure when the request came over https: directly, or through a proxy listed
in NARRATE_SERVE_TRUSTED_PROXIES), and signing out, which ends the session. A wrong key waits a
second, and an address that sent 5 wrong keys in a minute is answered 429 (jobs/web/limits.py, the
same count as wrong Bearer keys). Programs send the key as ``Authorization: Bearer``."""

from __future__ import annotations

import asyncio
import hmac

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from narrate.jobs.web import sessions
from narrate.jobs.web.guard import SESSION_COOKIE, WRONG_KEY_DELAY_S
from narrate.jobs.web.limits import Limits, client_of, too_many
from narrate.jobs.web.state import WebDep
from narrate.jobs.web.templating import render
from starlette.concurrency import run_in_threadpool

router = APIRouter(include_in_schema=False)


def local_path(raw: str | None) -> str:
    """A path of this server only (after signing in, after a form's action); else /queue."""
    raw = (raw or "").strip()
    return raw if raw.startswith("/") and not raw.startswith(("//", "/\\")) else "/queue"


@router.get("/login")
def login_page(request: Request, web: WebDep) -> Response:
    if web.settings.api_key is None:
        return RedirectResponse(local_path(request.query_params.get("next")), status_code=303)
    return render(request, "login.html", {"next": local_path(request.query_params.get("next")), "error": None})


@router.post("/login")
async def login(request: Request, web: WebDep) -> Response:
    form = await request.form()
    given, goto = form.get("key"), local_path(str(form.get("next") or ""))
    key = web.settings.api_key
    if key is None:
        return RedirectResponse(goto, status_code=303)
    limits: Limits = request.app.state.limits
    client = client_of(request.scope.get("client"))
    if not isinstance(given, str) or not hmac.compare_digest(given.strip().encode(), key.encode()):
        wait = limits.wrong_keys.wait_s(client)  # the right key always signs in; wrong ones past the limit wait
        if wait > 0:
            raise too_many("too many wrong keys from this address", wait)
        limits.wrong_keys.record(client)
        await asyncio.sleep(WRONG_KEY_DELAY_S)
        return render(request, "login.html", {"next": goto, "error": "That is not the server's key."}, status=401)
    token = await run_in_threadpool(sessions.start, web.redis, key)
    answer = RedirectResponse(goto, status_code=303)
    answer.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=sessions.SESSION_DAYS * 86400,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return answer


@router.post("/logout")
def logout(request: Request, web: WebDep) -> RedirectResponse:
    """Sign out: the session ends on the server (its cookie, even copied, lets nothing in again)."""
    token = request.cookies.get(SESSION_COOKIE, "")
    if token:
        sessions.end(web.redis, token)
    answer = RedirectResponse("/login", status_code=303)
    answer.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return answer
