"""What every route of `narrate serve` reads: the server's settings and its Redis client (one
connection pool for the process, kept by the command for as long as it serves)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import redis
from narrate.jobs.settings import Settings

if TYPE_CHECKING:
    from starlette.requests import Request


@dataclass(frozen=True)
class Web:
    settings: Settings
    redis: redis.Redis


def web_of(request: Request) -> Web:
    web = request.app.state.web
    assert isinstance(web, Web)
    return web
