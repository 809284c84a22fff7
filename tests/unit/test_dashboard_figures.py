"""The progress page's figures (percent, realtime factor, ETA, due times) and its bound on a long
queue, through the dashboard app in this process."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from helpers.dashboard import queue
from narrate.jobs.api.submit import JOB_FUNCTION
from narrate.jobs.dashboard.app import make_app
from narrate.jobs.dashboard.overview import figures
from narrate.jobs.dashboard.page import when
from rq import Queue


def test_figures_are_estimated_when_the_worker_does_not_record_them():
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    started = now - timedelta(seconds=100)
    f = figures({"progress": {"done": 25, "total": 100, "audio_seconds": 200.0}}, started, now, running=True)
    assert (f.percent, f.realtime_factor, f.eta_seconds) == (25.0, 2.0, 300.0)
    recorded = {
        "progress": {"done": 25, "total": 100, "audio_seconds": 200.0, "realtime_factor": 3.5, "eta_seconds": 42}
    }
    f = figures(recorded, started, now, running=True)
    assert (f.realtime_factor, f.eta_seconds) == (3.5, 42.0)
    f = figures({"progress": {"done": 0, "total": 100, "audio_seconds": 0.0}}, started, now, running=True)
    assert (f.percent, f.realtime_factor, f.eta_seconds) == (0.0, None, None)
    assert figures({}, None, now, running=False).percent is None  # not a narrate job: no figures
    assert figures(recorded, started, now, running=False).eta_seconds is None  # no ETA unless it runs
    assert when(now + timedelta(hours=2), now).endswith("(in 2 h 00 min)")


def test_the_progress_page_stays_quick_with_ten_thousand_queued_jobs(env, external_redis):
    """Each list is bounded: 10,000 queued jobs make a page of the first 50 and a count, quickly."""
    q = queue(external_redis)
    meta = {"progress": {"done": 0, "total": 5, "audio_seconds": 0.0}}
    with external_redis.pipeline() as p:
        q.enqueue_many(
            [
                Queue.prepare_data(JOB_FUNCTION, ("{}",), job_id=f"j{i}", description=f"narrate doc{i}", meta=meta)
                for i in range(10_000)
            ],
            pipeline=p,
        )
        p.execute()
    client = make_app(env["NARRATE_REDIS_URL"]).test_client()
    started = time.monotonic()
    reply = client.get("/narrate", base_url="http://127.0.0.1:9181")
    assert time.monotonic() - started < 1.0
    assert reply.status_code == 200 and "10000 queued" in reply.text
    assert reply.text.count("<tr data-job-id=") == 50 and "9950" in reply.text


def test_a_canceled_job_has_an_empty_error_cell_not_none(env, external_redis):
    from narrate.jobs.queue.cancel import cancel

    q = queue(external_redis)
    meta = {"progress": {"done": 0, "total": 5, "audio_seconds": 0.0}}
    q.enqueue_call(JOB_FUNCTION, ("{}",), job_id="stopped-one", description="narrate doc", meta=meta)
    cancel(external_redis, "stopped-one", asked_by="test")
    client = make_app(env["NARRATE_REDIS_URL"]).test_client()
    reply = client.get("/narrate", base_url="http://127.0.0.1:9181")
    assert reply.status_code == 200 and 'data-job-id="stopped-one"' in reply.text, reply.text[-2000:]
    row = reply.text.split('data-job-id="stopped-one"')[1].split("</tr>")[0]
    assert '<td class="desc error"></td>' in row and "None" not in row, row
