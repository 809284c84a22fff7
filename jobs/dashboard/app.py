"""`narrate dashboard`: rq-dashboard set up for narrate's queues, plus narrate's progress page.

rq-dashboard 0.9 needs these fixes to be usable here, applied at start: the JSON serializer
(narrate never pickles), `Worker.all` with that serializer (without it the workers page returns
HTTP 500 while a worker is busy with a JSON job), the workers page naming a worker's current job
by its description (rq-dashboard shows the call string, `narrate.jobs.task.narrate_job({...`),
and safe exposure: it binds to 127.0.0.1 by default and refuses any other address without a
username and password (basic auth), and narrate's own hooks (dashboard_guard) keep other web
pages from using or reading it. Its pages show the Redis URL redacted by narrate (rq-dashboard's
own masking misses some passwords). narrate's page (`/narrate`, jobs/dashboard/page.py) shows
progress, realtime factor, ETA and due times; a link to it is added to rq-dashboard's navigation.
What of rq-dashboard this relies on is listed and checked at start in jobs/dashboard/compat.py.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from narrate.jobs import security
from narrate.jobs.dashboard import guard as dashboard_guard
from narrate.jobs.errors import BadInput
from narrate.jobs.server.connection import redact

if TYPE_CHECKING:  # imported where used at run time (flask comes with the dashboard extra)
    import redis
    from flask import Flask, Response
    from rq.job import Job
    from rq.worker import BaseWorker


def served_hosts(bind: str, port: int, configured: Iterable[str] = ()) -> frozenset[str]:
    """The Host header values to answer (raises BadInput for a malformed NARRATE_DASHBOARD_HOSTS entry)."""
    return security.served_hosts(bind, port, configured, "NARRATE_DASHBOARD_HOSTS")


def make_app(
    redis_url: str, username: str | None = None, password: str | None = None, hosts: frozenset[str] | None = None
) -> Flask:
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

    from narrate.jobs.dashboard.compat import check_dashboard_internals

    class JSONWorker(Worker):
        @classmethod
        def all(cls, *args: Any, **kwargs: Any) -> list[BaseWorker]:
            kwargs.setdefault("serializer", JSONSerializer)
            return Worker.all(*args, **kwargs)

    app: Flask = make_flask_app(None, None, None, "")  # its basic auth would cover the blueprint only
    check_dashboard_internals(app)  # before replacing: a global it dropped would be made, not replaced
    web.Worker = JSONWorker
    web.config.serializer = JSONSerializer
    web.serialize_current_job = _current_job
    # Its own masking stops at the first "@" and misses unix://...?password=: use narrate's.
    web.escape_format_instance_list = lambda urls: [redact(u) for u in ([urls] if isinstance(urls, str) else urls)]
    dashboard_guard.install(app, allowed, username, password)
    _keep_running_jobs(app)
    _add_progress_page(app)
    app.config["DEPRECATED_OPTIONS"] = []
    app.config["RQ_DASHBOARD_REDIS_URL"] = redis_url
    app.config["RQ_DASHBOARD_DISABLE_DELETE"] = False
    web.setup_rq_connection(app)
    return app


def _current_job(job: Job | None) -> dict | str:
    """A worker's current job for rq-dashboard's workers page, named by its description. The page
    inserts `call_string` as HTML, so it is escaped here (a description holds a file name)."""
    if job is None:
        return "idle"
    from markupsafe import escape
    from rq_dashboard.web import serialize_date

    shown = job.description or job.id
    created = serialize_date(job.created_at)
    return dict(job_id=job.id, description=shown, created_at=created, call_string=str(escape(shown)))


def _keep_running_jobs(app: Flask) -> None:
    """rq-dashboard's Delete of a running job (and emptying the started registry) would drop the
    job's record while its worker keeps synthesizing and writes the output anyway: cancel such a
    job instead, as `narrate cancel` does (it stops within a second, keeps its checkpoints
    and its record, status canceled)."""
    from flask import current_app, jsonify, request
    from narrate.jobs.errors import NarrateError
    from narrate.jobs.queue.cancel import cancel
    from narrate.jobs.server.records import fetch, queue
    from rq.job import JobStatus
    from rq.registry import StartedJobRegistry

    def cancel_running(r: redis.Redis, job_id: str) -> bool:
        try:
            if fetch(r, job_id).get_status() != JobStatus.STARTED:
                return False
            cancel(r, job_id, asked_by="dashboard")
        except NarrateError:
            return False
        return True

    @app.before_request
    def cancel_instead_of_deleting_running_jobs() -> Response | None:
        args = request.view_args or {}
        r = current_app.redis_conn  # type: ignore[attr-defined]  # rq-dashboard sets it; Flask's types lack it
        if request.endpoint == "rq_dashboard.empty_queue" and args.get("registry_name") == "started":
            registry = StartedJobRegistry(queue=queue(r, args.get("queue_name", "")))
            for job_id in registry.get_job_ids(cleanup=False):
                cancel_running(r, job_id)
            return jsonify(status="OK")
        if request.endpoint == "rq_dashboard.delete_job_view" and cancel_running(r, args.get("job_id", "")):
            return jsonify(status="OK")
        return None


def _add_progress_page(app: Flask) -> None:
    """narrate's page, and a link to it in rq-dashboard's navigation bar (registered after the guard's
    hooks, so it runs before the guard sets the page's headers)."""
    from narrate.jobs.dashboard.page import add_nav_link, make_blueprint

    app.register_blueprint(make_blueprint())

    @app.after_request
    def link_progress_page(response: Response) -> Response:
        if response.mimetype == "text/html" and not response.direct_passthrough:
            response.set_data(add_nav_link(response.get_data(as_text=True)))
        return response


MAX_THREADS = 32  # requests served at once; more wait for a free one (each had its own thread, unbounded)
IDLE_TIMEOUT_S = 30  # a connection that sends nothing for this long is closed


def serve(app: Flask, host: str, port: int, threads: int = MAX_THREADS, idle_timeout: float = IDLE_TIMEOUT_S) -> None:
    """Serve `app` with werkzeug's threaded server, at most `threads` requests at once and idle
    connections dropped, until interrupted."""
    from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler

    class Handler(WSGIRequestHandler):
        timeout = idle_timeout

    class Bounded(ThreadedWSGIServer):
        slots = threading.BoundedSemaphore(threads)

        def process_request(self, request: Any, client_address: Any) -> None:
            self.slots.acquire()
            try:
                super().process_request(request, client_address)
            except BaseException:
                self.slots.release()
                raise

        def process_request_thread(self, request: Any, client_address: Any) -> None:
            try:
                super().process_request_thread(request, client_address)
            finally:
                self.slots.release()

    server = Bounded(host, port, app, handler=Handler)
    try:
        server.serve_forever()
    finally:
        server.server_close()


def check_exposure(bind: str, username: str | None, password: str | None) -> None:
    if (username is not None and not username.strip()) or (password is not None and not password.strip()):
        raise BadInput(
            "NARRATE_DASHBOARD_USERNAME and NARRATE_DASHBOARD_PASSWORD must not be blank (only spaces): "
            "set both to real values, or unset both on loopback"
        )
    if not security.is_loopback(bind) and not (username and password):
        raise BadInput(
            f"refusing to serve the dashboard on {bind} without a username and password "
            "(set NARRATE_DASHBOARD_USERNAME and NARRATE_DASHBOARD_PASSWORD)"
        )
