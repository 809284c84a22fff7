"""The ASGI app of `narrate serve` (FastAPI): the `/v1` routes, the OpenAPI document at
/openapi.json and its page at /docs (Swagger UI, vendored in static/swagger/), the pages for people
(jobs/web/pages.py, voice_pages.py, login.py; their templates and static files), every route behind
the guard (jobs/web/guard.py), and a lifespan that sends due callbacks (jobs/web/callbacks.py) and
clears uploads a killed server left (never those of another live server on the same home:
jobs/web/uploads.py `Owner`)."""

from __future__ import annotations

import asyncio
import contextlib
import html
from collections.abc import AsyncIterator
from types import FrameType
from typing import TYPE_CHECKING

from narrate.jobs.errors import BadInput
from narrate.jobs.security import is_loopback
from narrate.jobs.settings import Settings
from narrate.jobs.web import callbacks, errors, sessions
from narrate.jobs.web.guard import BodyRules, Guard, served_hosts
from narrate.jobs.web.limits import Limits
from narrate.jobs.web.state import Web
from narrate.jobs.web.uploads import MULTIPART_CAP, owner_of

if TYPE_CHECKING:
    from fastapi import FastAPI

VERSION = "1"


def check_exposure(bind: str, api_key: str | None) -> None:
    """Off loopback the API needs a key (raises BadInput saying so)."""
    if api_key is not None and not api_key.strip():
        raise BadInput("NARRATE_API_KEY is blank; set it to a long random value, or unset it on loopback")
    if api_key is not None and len(api_key) < 16:
        raise BadInput("NARRATE_API_KEY is shorter than 16 characters; use a long random value (openssl rand -hex 24)")
    if not is_loopback(bind) and not api_key:
        raise BadInput(
            f"refusing to serve on {bind} without an API key: set NARRATE_API_KEY (every request then needs "
            "Authorization: Bearer KEY), or bind to 127.0.0.1"
        )


def docs_page(openapi_url: str) -> str:
    """The /docs page: Swagger UI, vendored (static/swagger/, see its README.txt), started by
    static/docs.js on the OpenAPI document at `openapi_url`; nothing inline, nothing from elsewhere,
    so it runs under the pages' Content Security Policy."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>narrate API</title>\n'
        '<link rel="icon" href="data:,">\n<link rel="stylesheet" href="/static/swagger/swagger-ui.css">\n'
        '<script src="/static/swagger/swagger-ui-bundle.js" defer></script>\n'
        '<script src="/static/docs.js" defer></script>\n</head>\n<body>\n'
        f'<div id="swagger-ui" data-openapi="{html.escape(openapi_url)}"></div>\n</body>\n</html>\n'
    )


def make_app(web: Web, bind: str, port: int) -> Guard:
    """The app for `web` (settings, Redis), served at `bind`:`port`, wrapped in its guard."""
    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse
    from narrate.jobs.web import (
        feed_routes,
        login,
        narrations,
        pages,
        proof_routes,
        redo_routes,
        speech_api,
        voice_pages,
        voice_routes,
    )
    from narrate.jobs.web.templating import PAGE_POLICY, STATIC
    from starlette.staticfiles import StaticFiles

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        owner = owner_of(web.settings.home)  # this server's uploads; those of no live server are removed
        await asyncio.to_thread(owner.sweep, web.settings.serve_body_s)
        sender = asyncio.create_task(callbacks.loop(web))
        try:
            yield
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
            owner.release()

    app = FastAPI(
        title="narrate",
        version=VERSION,
        summary="Documents narrated by a queue of Qwen3-TTS workers; OpenAI's speech endpoint on the same workers.",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.web = web
    app.state.limits = limits = Limits(web.settings.serve_submits_per_min, web.settings.serve_client_streams)
    errors.install(app)
    # redo_routes.pages before pages.router: its POST /jobs/{id}/redo is not one of the Job page's other buttons
    routers = (
        narrations.router,
        proof_routes.router,
        redo_routes.router,
        speech_api.router,
        voice_routes.router,
        feed_routes.router,
        login.router,
        redo_routes.pages,
        pages.router,
        voice_pages.router,
    )
    for router in routers:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    page = docs_page(app.openapi_url or "/openapi.json")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(page)

    hosts = served_hosts(bind, port, web.settings.serve_hosts)
    settings, key = web.settings, web.settings.api_key
    rules = BodyRules(settings.serve_stall_s, settings.serve_min_rate_kib * 1024, settings.serve_body_s)

    def session_valid(token: str) -> bool:
        return key is not None and sessions.valid(web.redis, key, token)

    return Guard(app, hosts, key, rules, MULTIPART_CAP, {"/docs": PAGE_POLICY.encode()}, session_valid, limits)


def serve(app: Guard, bind: str, port: int, settings: Settings) -> None:
    """Serve until interrupted (uvicorn, one process; the routes' Redis calls run in its threads). Its
    log never shows a feed's token or a key given in a query (jobs/web/access_log.py). Connections are
    kept by jobs/web/connections.py (a deadline for headers, a cap per address and in all, idle ones
    closed first); proxy headers are believed only from NARRATE_SERVE_TRUSTED_PROXIES. Told to stop,
    it sets the app's `Web.stopping` before uvicorn waits for the answers under way: the speech
    requests still waiting for clips end within a block instead of holding the stop up."""
    import uvicorn
    from fastapi import FastAPI
    from narrate.jobs.web.access_log import log_config
    from narrate.jobs.web.connections import protocol

    inner = app.app
    assert isinstance(inner, FastAPI)  # make_app's
    stopping = inner.state.web.stopping

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            stopping.set()
            super().handle_exit(sig, frame)

    proxies = settings.serve_trusted_proxies
    http = protocol(
        settings.serve_header_s,
        settings.serve_client_connections,
        settings.serve_connections,
        settings.serve_min_rate_kib << 10,
    )
    config = uvicorn.Config(
        app,
        host=bind,
        port=port,
        log_level="info",
        server_header=False,
        timeout_keep_alive=5,
        proxy_headers=bool(proxies),
        forwarded_allow_ips=list(proxies) or None,
        http=http,
        limit_concurrency=None,
        log_config=log_config(),
    )
    server = Server(config)
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    if not server.started:
        raise SystemExit(3)  # as uvicorn.run: it could not start (the port taken)
