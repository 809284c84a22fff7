"""`narrate serve`: the web pages and the HTTP API on the queue."""

from __future__ import annotations

import sys

import click
from narrate.cli.common import one_line_errors, settings_from_env
from narrate.jobs.errors import BadInput
from narrate.jobs.server.connection import Connection


@click.command()
@click.option(
    "--bind", default="127.0.0.1", show_default=True, help="Address to listen on (off loopback: NARRATE_API_KEY)."
)
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help="Port to listen on.")
@one_line_errors
def serve(bind, port) -> None:
    """Serve the web pages (New, Queue, Job, Books, Voices) and the HTTP API: /v1/narrations
    (documents, as `submit`), OpenAI's /v1/audio/speech and /v1/models, /v1/audio/voices; OpenAPI
    at /docs. Needs `pip install -e '.[web]'`."""
    import signal

    try:
        from narrate.jobs.web.app import check_exposure, make_app
        from narrate.jobs.web.app import serve as serve_app
        from narrate.jobs.web.state import Web
    except ImportError as e:
        raise BadInput(f"the web server is not installed ({e.name}); pip install 'narrate[web]'") from None

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # leave cleanly: release the server
    settings = settings_from_env()
    check_exposure(bind, settings.api_key)
    with Connection(settings) as conn:  # keeps the embedded server up while serving
        app = make_app(Web(settings, conn.redis), bind, port)
        shown = f"[{bind}]" if ":" in bind else bind
        click.echo(f"narrate serve on http://{shown}:{port} ({conn.url}): pages at /, API docs at /docs", err=True)
        if bind in ("0.0.0.0", "::") and not settings.serve_hosts:
            click.echo("Set NARRATE_SERVE_HOSTS to the names you reach it by (others get 400).", err=True)
        serve_app(app, bind, port, settings)
