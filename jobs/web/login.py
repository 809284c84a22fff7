"""Signing in to the pages once NARRATE_API_KEY is set: a form that takes the key and sets the
session cookie (an HMAC of the key, jobs/web/guard.py `session_token`: HttpOnly, SameSite=Strict,
for this server's paths), and signing out. Programs send the key as ``Authorization: Bearer``."""

from __future__ import annotations

import asyncio
import hmac

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from narrate.jobs.web.guard import SESSION_COOKIE, session_token
from narrate.jobs.web.state import web_of
from narrate.jobs.web.templating import render

router = APIRouter(include_in_schema=False)
SESSION_DAYS = 30
WRONG_KEY_DELAY_S = 1.0  # a wrong key waits: guessing by hand is slow (the key itself is long and random)


def local_path(raw: str | None) -> str:
    """A path of this server only (after signing in, after a form's action); else /queue."""
    raw = (raw or "").strip()
    return raw if raw.startswith("/") and not raw.startswith(("//", "/\\")) else "/queue"


@router.get("/login")
def login_page(request: Request) -> Response:
    web = web_of(request)
    if web.settings.api_key is None:
        return RedirectResponse(local_path(request.query_params.get("next")), status_code=303)
    return render(request, "login.html", {"next": local_path(request.query_params.get("next")), "error": None})


@router.post("/login")
async def login(request: Request) -> Response:
    web = web_of(request)
    form = await request.form()
    given, goto = form.get("key"), local_path(str(form.get("next") or ""))
    key = web.settings.api_key
    if key is None:
        return RedirectResponse(goto, status_code=303)
    if not isinstance(given, str) or not hmac.compare_digest(given.strip().encode(), key.encode()):
        await asyncio.sleep(WRONG_KEY_DELAY_S)
        return render(request, "login.html", {"next": goto, "error": "That is not the server's key."}, status=401)
    answer = RedirectResponse(goto, status_code=303)
    answer.set_cookie(SESSION_COOKIE, session_token(key), max_age=SESSION_DAYS * 86400, path="/", httponly=True,
                      samesite="strict", secure=request.url.scheme == "https")  # fmt: skip
    return answer


@router.post("/logout")
def logout() -> RedirectResponse:
    answer = RedirectResponse("/login", status_code=303)
    answer.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return answer
