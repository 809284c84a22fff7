"""The dashboard's narrate page (`/narrate`): every queue's jobs as a person reads them, beside
rq-dashboard's pages (which show job meta only as raw JSON). Running jobs get a progress bar,
percentage, audio seconds, realtime factor and ETA; scheduled jobs their due time; finished ones
their output; failed ones their error.

The page runs no script (it reloads itself with a meta refresh), and everything taken from a job
(descriptions hold document file names) is escaped by Jinja's autoescaping. Needs Flask, which
comes with the `dashboard` extra: import this module only from `make_app`.
"""

from __future__ import annotations

from datetime import UTC, datetime

import redis
from flask import Blueprint, Response, current_app, render_template_string
from narrate.jobs import humanize
from narrate.jobs.dashboard.overview import STATES, figures_of, overview

REFRESH_S = 5
PATH = "/narrate"
NAV_LINK = f'<li class="nav-item"><a href="{PATH}" class="nav-link">Progress</a></li>'

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="{{ refresh }}">
<title>narrate: progress</title>
<link rel="stylesheet" href="{{ url_for('rq_dashboard.static', filename='css/bootstrap.min.css') }}">
<style>
body { margin: 1rem 2rem; } td, th { vertical-align: top; font-size: .9rem; }
progress { width: 10rem; } .desc { max-width: 40rem; overflow-wrap: anywhere; } .muted { color: #6c757d; }
</style></head>
<body>
<nav><a href="{{ url_for('rq_dashboard.queues_overview', instance_number=0) }}">Queues</a> ·
<a href="{{ url_for('rq_dashboard.jobs_overview', instance_number=0) }}">Jobs</a> ·
<a href="{{ url_for('rq_dashboard.workers_overview', instance_number=0) }}">Workers</a> ·
<strong>Progress</strong></nav>
<h1 class="h3 mt-3">narrate: progress</h1>
<p class="muted">As of {{ now|when(now) }}; this page reloads every {{ refresh }} s.</p>
{% for q in queues if not q.empty %}
<section id="queue-{{ q.name }}" class="mt-4">
<h2 class="h4">Queue {{ q.name }}</h2>
<p>{% for state in states %}{{ q.counts[state] }} {{ state }}{{ "" if loop.last else " · " }}{% endfor %}</p>
{% for state in states if q.rows.get(state) %}
<h3 class="h5">{{ titles[state] }}</h3>
<table class="table table-sm" data-state="{{ state }}">
<thead><tr><th>Job</th><th>Document</th>
{%- if state == "started" %}<th>Progress</th><th>Audio</th><th>Realtime factor</th><th>ETA</th><th>Started</th>
<th>Worker</th>
{%- elif state == "scheduled" %}<th>Due</th><th>Sentences</th>
{%- elif state == "queued" %}<th>Sentences</th><th>Enqueued</th>
{%- elif state == "finished" %}<th>Ended</th><th>Audio</th><th>Output</th>
{%- else %}<th>Ended</th><th>Progress</th><th>Error</th>{% endif %}</tr></thead>
<tbody>
{% for row in q.rows[state] %}{% set f = figures_of(row, state, now) %}
<tr data-job-id="{{ row.id }}">
<td><a href="{{ url_for('rq_dashboard.job_view', instance_number=0, job_id=row.id) }}"
 title="{{ row.id }}">{{ row.id[:22] }}</a></td>
<td class="desc">{{ row.description }}</td>
{%- if state == "started" %}
<td><progress max="100" value="{{ '%.1f'|format(f.percent or 0) }}"></progress>
 <span class="percent">{{ f.percent|percent }}</span> ({{ f.done }}/{{ f.total }} sentences)</td>
<td>{{ f.audio_seconds|duration }}</td>
<td class="rtf">{{ "%.2fx"|format(f.realtime_factor) if f.realtime_factor is not none else "-" }}</td>
<td class="eta">{{ f.eta_seconds|duration if f.eta_seconds is not none else "estimating" }}</td>
<td>{{ row.started_at|when(now) }}</td><td>{{ row.worker or "" }}</td>
{%- elif state == "scheduled" %}
<td class="due">{{ row.due_at|when(now) }}</td><td>{{ f.total }}</td>
{%- elif state == "queued" %}
<td>{{ f.total }}</td><td>{{ row.enqueued_at|when(now) }}</td>
{%- elif state == "finished" %}
<td>{{ row.ended_at|when(now) }}</td><td>{{ f.audio_seconds|duration }}</td>
<td class="desc">{{ (row.result or {}).get("output") or "" }}</td>
{%- else %}
<td>{{ row.ended_at|when(now) }}</td><td>{{ f.percent|percent }} ({{ f.done }}/{{ f.total }})</td>
<td class="desc error">{{ row.error or "" }}</td>{% endif %}
</tr>
{% endfor %}</tbody></table>
{% if q.counts[state] > q.rows[state]|length %}<p class="muted">{{ q.counts[state] - q.rows[state]|length }}
 more not shown ({{ "newest" if state in ("finished", "failed", "canceled") else "first" }}
 {{ q.rows[state]|length }} listed).</p>
{% endif %}
{% endfor %}
</section>
{% else %}<p>No jobs on this server.</p>
{% endfor %}
{% set idle = queues|selectattr("empty")|map(attribute="name")|list %}
{% if idle %}<p class="muted mt-4">Empty queues: {{ idle|join(", ") }}</p>{% endif %}
</body></html>
"""

TITLES = {
    "started": "Running",
    "scheduled": "Scheduled",
    "queued": "Queued",
    "failed": "Failed (newest first)",
    "canceled": "Canceled (newest first)",
    "finished": "Finished (newest first)",
}


def duration(seconds: float | None) -> str:
    """42 s, 12 min 05 s, 3 h 07 min."""
    return humanize.duration(seconds, spelled=True)


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%" if value in (0, 100) else f"{value:.1f}%"


def when(dt: datetime | None, now: datetime) -> str:
    """Local time of the dashboard's host with its zone, and how far from now."""
    if dt is None:
        return "-"
    local = dt.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    delta = (dt - now).total_seconds()
    if abs(delta) < 1:
        return local
    return f"{local} ({'in ' + duration(delta) if delta > 0 else duration(-delta) + ' ago'})"


def make_blueprint() -> Blueprint:
    page = Blueprint("narrate", __name__)
    page.add_app_template_filter(duration, "duration")
    page.add_app_template_filter(percent, "percent")
    page.add_app_template_filter(when, "when")

    @page.route(PATH)
    def progress() -> Response | str:
        now = datetime.now(UTC)
        try:
            queues = overview(current_app.redis_conn)  # type: ignore[attr-defined]  # rq-dashboard sets it; Flask's types lack it
        except redis.RedisError as e:
            return Response(f"The Redis server did not answer: {type(e).__name__}.\n", 503, mimetype="text/plain")
        return render_template_string(
            _TEMPLATE, queues=queues, now=now, refresh=REFRESH_S, states=STATES, titles=TITLES, figures_of=figures_of
        )

    return page


def add_nav_link(html: str) -> str:
    """rq-dashboard's navigation bar with a link to this page (its pages are left as they are
    otherwise; if its markup changes, the link is simply missing)."""
    marker = '<ul class="navbar-nav mr-auto">'
    return html.replace(marker, marker + NAV_LINK, 1) if NAV_LINK not in html else html
