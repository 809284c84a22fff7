"""Every rq-dashboard internal `narrate dashboard` relies on, in one place, and the check that fails
loudly when an rq-dashboard release changes one (rq-dashboard 0.9.0 is the version tested).

- app.py replaces four module globals of ``rq_dashboard.web`` (``REPLACED_GLOBALS``): assigning a
  name rq-dashboard no longer has, or no longer reads, changes nothing and says nothing (the
  workers page would fail again on JSON jobs, the Redis URL would show unredacted). Each must
  exist, and the views listed with it must still read it by that name.
- app.py's cancel-instead-of-delete hook, the guard's refusal of a state-changing GET and
  narrate's page (its links) find rq-dashboard's views by endpoint name and URL arguments
  (``ENDPOINTS``): a renamed endpoint would let the dashboard's Delete drop a running job's record
  while its worker goes on writing the output.
- app.py calls a few of its functions positionally (``CALLS``) and sets configuration keys and an
  app attribute that its code reads (``READS``).

``check_dashboard_internals`` runs where the app is built (``make_app``), before any global is
replaced, and raises ``DashboardInternalsChanged`` naming every one that is gone.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterator
from typing import Any

from narrate.jobs.errors import NarrateError

TESTED_VERSION = "0.9.0"

# rq_dashboard.web globals app.py replaces, each with endpoints whose views read it by that name
# ("config.serializer": the attribute of web.config).
REPLACED_GLOBALS: dict[str, tuple[str, ...]] = {
    "Worker": ("rq_dashboard.workers_overview", "rq_dashboard.list_workers"),
    "config.serializer": ("rq_dashboard.jobs_overview", "rq_dashboard.job_info", "rq_dashboard.empty_queue"),
    "serialize_current_job": ("rq_dashboard.list_workers",),
    "escape_format_instance_list": (
        "rq_dashboard.queues_overview",
        "rq_dashboard.workers_overview",
        "rq_dashboard.jobs_overview",
        "rq_dashboard.job_view",
    ),
}

# Endpoints narrate matches or links to, with the URL arguments it reads or passes.
ENDPOINTS: dict[str, tuple[str, ...]] = {
    "rq_dashboard.empty_queue": ("queue_name", "registry_name"),  # app.py: cancel running jobs instead
    "rq_dashboard.delete_job_view": ("job_id",),  # app.py: cancel a running job instead
    "rq_dashboard.requeue_all": ("queue_name",),  # guard.STATE_CHANGING_GETS
    "rq_dashboard.queues_overview": ("instance_number",),  # page.py's links
    "rq_dashboard.jobs_overview": ("instance_number",),
    "rq_dashboard.workers_overview": ("instance_number",),
    "rq_dashboard.job_view": ("instance_number", "job_id"),
    "rq_dashboard.static": ("filename",),
    "rq_dashboard.list_workers": ("instance_number",),  # reads two of the replaced globals
    "rq_dashboard.job_info": ("instance_number", "job_id"),
}

# Functions app.py calls, with their leading positional parameters (it passes them in this order).
CALLS: dict[str, tuple[str, ...]] = {
    "cli.make_flask_app": ("config", "username", "password", "url_prefix"),
    "web.setup_rq_connection": ("current_app",),
    "web.serialize_date": ("dt",),
}

# Names (configuration keys, app attributes) a function's code must still read or set.
READS: dict[str, tuple[str, ...]] = {
    "web.setup_rq_connection": ("RQ_DASHBOARD_REDIS_URL", "redis_conn"),  # app.py reads app.redis_conn
    "web.check_delete_enable": ("RQ_DASHBOARD_DISABLE_DELETE",),
    "web.queues_overview": ("DEPRECATED_OPTIONS",),
}


class DashboardInternalsChanged(NarrateError):
    """The installed rq-dashboard no longer has what `narrate dashboard` relies on."""


def _installed_version() -> str:
    try:
        from importlib.metadata import version

        return version("rq-dashboard")
    except Exception:  # noqa: BLE001 - only for the message
        return "unknown"


def _code_names(code: types.CodeType) -> Iterator[str]:
    """Names and string constants a code object reads, its nested functions and comprehensions too."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, str):
            yield const
        elif isinstance(const, types.CodeType):
            yield from _code_names(const)


def _reads(fn: Any) -> set[str]:
    fn = inspect.unwrap(fn)  # rq-dashboard's views are wrapped (functools.wraps) by its decorators
    code = getattr(fn, "__code__", None)
    return set(_code_names(code)) if code is not None else set()


def _lookup(modules: dict[str, Any], name: str) -> Any:
    module, _, path = name.partition(".")
    obj: Any = modules[module]
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _endpoint_problems(app: Any) -> list[str]:
    arguments: dict[str, set[str]] = {}
    for rule in app.url_map.iter_rules():
        arguments.setdefault(rule.endpoint, set()).update(rule.arguments, rule.defaults or {})
    problems = []
    for endpoint, args in ENDPOINTS.items():
        if endpoint not in arguments or endpoint not in app.view_functions:
            problems.append(f"endpoint {endpoint} is missing")
            continue
        missing = [a for a in args if a not in arguments[endpoint]]
        if missing:
            problems.append(f"endpoint {endpoint} lacks URL arguments {missing}")
    return problems


def _global_problems(web: Any, app: Any) -> list[str]:
    problems = []
    for name, readers in REPLACED_GLOBALS.items():
        if _lookup({"web": web}, f"web.{name}") is None:
            problems.append(f"rq_dashboard.web.{name} is missing")
            continue
        parts = name.split(".")
        for endpoint in readers:
            view = app.view_functions.get(endpoint)
            if view is not None and not set(parts) <= _reads(view):  # a missing endpoint: reported above
                problems.append(f"endpoint {endpoint} no longer reads rq_dashboard.web.{name}")
    return problems


def _call_problems(modules: dict[str, Any]) -> list[str]:
    problems = []
    for name, params in CALLS.items():
        fn = _lookup(modules, name)
        if fn is None:
            problems.append(f"rq_dashboard.{name} is missing")
            continue
        have = tuple(inspect.signature(fn).parameters)[: len(params)]
        if have != params:
            problems.append(f"rq_dashboard.{name} takes {list(have)} first, not {list(params)}")
    for name, names in READS.items():
        fn = _lookup(modules, name)
        if fn is None:
            problems.append(f"rq_dashboard.{name} is missing")
            continue
        missing = [n for n in names if n not in _reads(fn)]
        if missing:
            problems.append(f"rq_dashboard.{name} no longer reads {missing}")
    return problems


def check_dashboard_internals(app: Any = None) -> None:
    """Raise DashboardInternalsChanged naming every listed rq-dashboard internal that is gone or
    changed. `app`: the Flask app rq-dashboard's ``make_flask_app`` made (else one is made here)."""
    from rq_dashboard import cli, web

    if app is None:
        app = cli.make_flask_app(None, None, None, "")
    problems = _endpoint_problems(app) + _global_problems(web, app) + _call_problems({"cli": cli, "web": web})
    if problems:
        raise DashboardInternalsChanged(
            f"rq-dashboard's internals changed (installed: {_installed_version()}; narrate is tested with "
            f"rq-dashboard {TESTED_VERSION}, install that version: pip install 'rq-dashboard=={TESTED_VERSION}'); "
            "`narrate dashboard` needs updating: " + "; ".join(problems)
        )
