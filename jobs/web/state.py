"""What every route of `narrate serve` reads: the server's settings and its Redis client (one
connection pool for the process, kept by the command for as long as it serves; blocking reads have
clients of their own, jobs/server/connection.py), and whether the server is stopping, given to a
route as a FastAPI dependency: a parameter ``web: WebDep``."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Annotated

import redis
from fastapi import Depends, Request
from narrate.jobs.settings import Settings


@dataclass(frozen=True)
class Web:
    settings: Settings
    redis: redis.Redis
    # Set when the server is told to stop (jobs/web/app.py `serve`): a speech request waiting for its
    # clips ends within a block (jobs/web/speech_clips.py), so that it does not hold up the stop.
    stopping: threading.Event = field(default_factory=threading.Event, compare=False)


def get_web(request: Request) -> Web:
    """The app's Web (set by jobs/web/app.py `make_app`)."""
    web = request.app.state.web
    assert isinstance(web, Web)
    return web


WebDep = Annotated[Web, Depends(get_web)]
