"""The dashboard's progress page (`/narrate`) and rq-dashboard's pages while a worker runs a job:
what a person sees in a real browser (headless Chromium, `--dump-dom`): the running job's
progress, realtime factor and ETA, a scheduled job's due time, finished output and failed error,
escaped document names, the workers page naming the current job by its description, and no
page answering HTTP 500 while the worker is busy with a JSON job."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from helpers.books import book
from helpers.chromium import SKIP_REASON, find_chromium
from helpers.dashboard import dashboard, fail_job, queue, request
from helpers.fake import fake_env
from helpers.ops import job_meta, submit_book
from helpers.procs import start_worker, stop_worker, wait_for_job, wait_until
from markupsafe import escape
from rq.job import Job
from rq.results import Result
from rq.serializers import JSONSerializer

STATES = ("queued", "started", "scheduled", "finished", "failed")


MARKUP = '<img src=x onerror=alert(1)>later & "co"'


def schedule(r, job_id: str, due: datetime) -> None:
    """Move a queued job to its queue's ScheduledJobRegistry, as `submit --at` leaves it."""
    q = queue(r)
    job = Job.fetch(job_id, connection=r, serializer=JSONSerializer)
    q.remove(job)
    q.schedule_job(job, due)


def row(dom: str, job_id: str) -> str:
    """The table row of one job on the progress page."""
    m = re.search(rf'<tr data-job-id="{re.escape(job_id)}">(.*?)</tr>', dom, re.S)
    assert m, f"no row for {job_id} in {dom[:3000]}"
    return m.group(1)


def cell(text: str, cls: str) -> str:
    m = re.search(rf'<(td|span) class="{cls}">(.*?)</\1>', text, re.S)
    assert m, f"no {cls} cell in {text}"
    return m.group(2).strip()


@pytest.mark.skipif(find_chromium() is None, reason=SKIP_REASON)
def test_a_person_sees_progress_eta_and_due_times_while_a_job_runs(env, home, voice_wav, external_redis, page):
    browser_page = page
    r = external_redis
    e = fake_env(env, home, delay_ms=100)
    quick = submit_book(e, home, voice_wav, book(2), name="quick")
    long = submit_book(e, home, voice_wav, book(240), name="long")
    later = submit_book(e, home, voice_wav, book(5), name=MARKUP)
    waiting = submit_book(e, home, voice_wav, book(4), name="waiting")
    bad = submit_book(e, home, voice_wav, book(3), name="bad")
    due = (datetime.now(UTC) + timedelta(hours=2)).replace(microsecond=0)
    schedule(r, later, due)
    fail_job(r, bad)
    failed = Job.fetch(bad, connection=r, serializer=JSONSerializer)
    Result.create_failure(failed, 3600, "Traceback (most recent call last):\nRuntimeError: made to fail by the test")
    worker = start_worker(e)
    try:
        assert wait_for_job(quick, timeout=120)["status"] == "finished"
        wait_until(lambda: job_meta(r, long)["progress"]["done"] >= 12, 60, "the long job's progress")
        with dashboard(e) as port:
            base = f"http://127.0.0.1:{port}"
            # Every page and every data URL the pages load answers while the worker is busy.
            lists = [f"/0/data/jobs/narrate/{state}/8/asc/1.json" for state in STATES]
            for path in (
                "/",
                "/0/view/workers",
                "/0/view/jobs",
                "/narrate",
                f"/0/view/job/{long}",
                f"/0/view/job/{later}",
                "/0/data/queues.json",
                "/0/data/workers.json",
                f"/0/data/job/{long}.json",
                f"/0/data/job/{later}.json",
                *lists,
            ):
                reply = request(port, "GET", path)
                assert reply.status == 200, (path, reply.status, reply.text[:500])
            workers_json = json.loads(request(port, "GET", "/0/data/workers.json").text)["workers"]
            current = [w["current_job"] for w in workers_json]
            assert [c["call_string"] for c in current if c != "idle"] == ["narrate long (240 sentences) -&gt; long.wav"]

            dom = rendered(browser_page, f"{base}/narrate")
            running = row(dom, long)
            percent = float(cell(running, "percent").rstrip("%"))
            done = job_meta(r, long)["progress"]["done"]
            assert 5 <= percent <= 100 * done / 240 + 0.1, running
            assert re.search(r"\(\d+/240 sentences\)", running), running
            assert re.fullmatch(r"\d+\.\d\dx", cell(running, "rtf")), running
            assert re.fullmatch(r"\d+ s|\d+ min \d\d s|\d+ h \d\d min", cell(running, "eta")), running
            assert "<progress" in running
            assert worker_name(r, long) in running
            scheduled = row(dom, later)
            assert due.astimezone().strftime("%Y-%m-%d %H:%M:%S") in cell(scheduled, "due"), scheduled
            assert re.search(r"\(in (1 h 5\d|2 h 00) min\)", cell(scheduled, "due")), scheduled
            assert html.escape(MARKUP, quote=False) in scheduled and "<img" not in dom
            assert str(home / "out" / "quick.wav") in row(dom, quick)
            assert cell(row(dom, bad), "desc error") == "RuntimeError: made to fail by the test"
            assert "waiting" in row(dom, waiting)

            workers = rendered(browser_page, f"{base}/0/view/workers")
            assert "narrate long (240 sentences)" in workers, workers[-3000:]
            assert "narrate_job(" not in workers
            queues = rendered(browser_page, f"{base}/0/view/queues")
            assert 'href="/narrate"' in queues
        assert wait_for_job(long, timeout=5, states=("started",))
    finally:
        stop_worker(worker)


def rendered(page, url: str) -> str:
    """The page's DOM as a person sees it once its scripts have fetched what they show."""
    page.goto(url, wait_until="networkidle")
    return page.content()


def worker_name(r, job_id: str) -> str:
    return Job.fetch(job_id, connection=r, serializer=JSONSerializer).worker_name


def test_the_progress_page_escapes_names_and_runs_no_script(env, home, voice_wav, external_redis):
    """Without a browser: the page over a real HTTP dashboard is escaped, scheduled jobs show their
    due time, and the navigation of rq-dashboard's pages links to it."""
    e = fake_env(env, home)
    later = submit_book(e, home, voice_wav, book(5), name=MARKUP)
    due = (datetime.now(UTC) + timedelta(minutes=90)).replace(microsecond=0)
    schedule(external_redis, later, due)
    with dashboard(e) as port:
        reply = request(port, "GET", "/narrate")
        assert reply.status == 200
        script_src = reply.headers["content-security-policy"].split("script-src")[1].split(";")[0]
        assert "<script" not in reply.text and "sha256" not in script_src and "unsafe-inline" not in script_src
        scheduled = row(reply.text, later)
        assert str(escape(MARKUP)) in scheduled and "<img" not in reply.text
        assert due.astimezone().strftime("%Y-%m-%d %H:%M:%S") in cell(scheduled, "due")
        assert '<meta http-equiv="refresh"' in reply.text
        assert '<a href="/narrate" class="nav-link">Progress</a>' in request(port, "GET", "/0/view/workers").text
