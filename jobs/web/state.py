"""What every route of `narrate serve` reads: the server's settings and its Redis client (one
connection pool for the process, kept by the command for as long as it serves), given to a route
as a FastAPI dependency: a parameter ``web: WebDep``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import redis
from fastapi import Depends, Request
from narrate.jobs.settings import Settings


@dataclass(frozen=True)
class Web:
    settings: Settings
    redis: redis.Redis


def get_web(request: Request) -> Web:
    """The app's Web (set by jobs/web/app.py `make_app`)."""
    web = request.app.state.web
    assert isinstance(web, Web)
    return web


WebDep = Annotated[Web, Depends(get_web)]
