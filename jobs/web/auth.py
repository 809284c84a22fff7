"""The routes' security, declared the FastAPI way: `SIGNED_IN`, a dependency of every router behind
the key (the API's and the pages'), made of `fastapi.security`'s HTTPBearer (``Authorization:
Bearer KEY``, NARRATE_API_KEY) and APIKeyCookie (the pages' session cookie), so /openapi.json
shows both schemes and which operations need them. The guard (jobs/web/guard.py, after the policy
in jobs/security.py) enforces it for every request before a route is reached, and marks a request
it checked; this dependency checks again (the key in constant time, the cookie against the live
sessions) any request the guard did not mark, so a route is never served unchecked."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Request, Security
from fastapi.security import APIKeyCookie, HTTPAuthorizationCredentials, HTTPBearer
from narrate.jobs.web import sessions
from narrate.jobs.web.errors import ApiError
from narrate.jobs.web.guard import BEARER, SESSION_COOKIE, SIGNED_IN_STATE
from narrate.jobs.web.state import WebDep

bearer = HTTPBearer(
    auto_error=False,
    description="NARRATE_API_KEY, once the server has one (always off loopback): `Authorization: Bearer KEY`.",
)
session_cookie = APIKeyCookie(
    name=SESSION_COOKIE,
    auto_error=False,
    description="The pages' session: the cookie the sign-in form (/login) sets; HttpOnly, SameSite=Strict.",
)


def signed_in(
    request: Request,
    web: WebDep,
    key: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
    cookie: Annotated[str | None, Security(session_cookie)],
) -> None:
    """Nothing to check without NARRATE_API_KEY; else the guard's check, or the key or a live session
    (raises ApiError 401 otherwise)."""
    api_key = web.settings.api_key
    if not api_key or request.scope.get("state", {}).get(SIGNED_IN_STATE):
        return
    if key is not None and hmac.compare_digest(key.credentials.encode(), api_key.encode()):
        return
    if cookie and sessions.valid(web.redis, api_key, cookie):
        return
    raise ApiError(
        401, "no API key: send Authorization: Bearer KEY (NARRATE_API_KEY)", headers={"www-authenticate": BEARER}
    )


SIGNED_IN = Security(signed_in)  # a router's `dependencies=[SIGNED_IN]`
