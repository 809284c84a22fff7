"""`narrate dashboard`: rq-dashboard set up for narrate's queues.

rq-dashboard 0.9 needs these fixes to be usable here, applied at start: the JSON serializer
(narrate never pickles), `Worker.all` with that serializer (without it the workers page returns
HTTP 500 while a worker is busy with a JSON job), and safe exposure: it binds to 127.0.0.1 by
default and refuses any other address without a username and password (basic auth), and
narrate's own hooks (dashboard_guard) keep other web pages from using or reading it. Its pages
show the Redis URL redacted by narrate (rq-dashboard's own masking misses some passwords).
"""

from __future__ import annotations

from collections.abc import Iterable

from . import dashboard_guard
from .connection import redact
from .errors import BadInput

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def served_hosts(bind: str, port: int, configured: Iterable[str] = ()) -> frozenset[str]:
    """The Host header values to answer (raises BadInput for a malformed NARRATE_DASHBOARD_HOSTS entry)."""
    return dashboard_guard.allowed_hosts(bind, port, configured)


def make_app(
    redis_url: str, username: str | None = None, password: str | None = None, hosts: frozenset[str] | None = None
):
    """A Flask app serving rq-dashboard for `redis_url` with narrate's fixes, answering only `hosts`
    (default: those of 127.0.0.1:9181)."""
    allowed = hosts if hosts is not None else served_hosts("127.0.0.1", 9181)
    try:
        from rq import Worker
        from rq.serializers import JSONSerializer
        from rq_dashboard import web
        from rq_dashboard.cli import make_flask_app
    except ImportError as e:
        raise BadInput(f"rq-dashboard is not installed ({e.name}); pip install 'narrate[dashboard]'") from None

    class JSONWorker(Worker):
        @classmethod
        def all(cls, *args, **kwargs):
            kwargs.setdefault("serializer", JSONSerializer)
            return Worker.all(*args, **kwargs)

    web.Worker = JSONWorker
    web.config.serializer = JSONSerializer
    # Its own masking stops at the first "@" and misses unix://...?password=: use narrate's.
    web.escape_format_instance_list = lambda urls: [redact(u) for u in ([urls] if isinstance(urls, str) else urls)]
    app = make_flask_app(None, None, None, "")  # its basic auth would cover the blueprint only
    dashboard_guard.install(app, allowed, username, password)
    app.config["DEPRECATED_OPTIONS"] = []
    app.config["RQ_DASHBOARD_REDIS_URL"] = redis_url
    app.config["RQ_DASHBOARD_DISABLE_DELETE"] = False
    web.setup_rq_connection(app)
    return app


def check_exposure(bind: str, username: str | None, password: str | None) -> None:
    if bind not in LOOPBACK and not (username and password):
        raise BadInput(
            f"refusing to serve the dashboard on {bind} without a username and password "
            "(set NARRATE_DASHBOARD_USERNAME and NARRATE_DASHBOARD_PASSWORD)"
        )
