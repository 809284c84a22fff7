"""`narrate dashboard` in a real (headless Chromium, through Playwright) browser: a page on another
origin cannot make it change anything, a DNS-rebound name reads nothing, markup in a job's
description cannot run script, and the dashboard's own buttons (which POST through its JavaScript)
keep working. Skipped where no Chromium or Chrome is installed (NARRATE_TEST_CHROMIUM names one)."""

from __future__ import annotations

import time

import pytest
from helpers.books import book
from helpers.chromium import SKIP_REASON, find_chromium, launch_args, serve_directory
from helpers.dashboard import dashboard, fail_job, request, state
from helpers.fake import fake_env
from helpers.ops import submit, submit_book
from helpers.procs import wait_until
from helpers.servers import free_port

pytestmark = pytest.mark.skipif(find_chromium() is None, reason=SKIP_REASON)


def _answers(port: int) -> bool:
    try:
        return request(port, "GET", "/").status == 200  # its directory listing
    except OSError:
        return False


@pytest.fixture
def jobs(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    ids = [submit_book(e, home, voice_wav, book(3 + i), name=f"book{i}") for i in range(4)]
    fail_job(external_redis, ids[3])
    return e, external_redis, ids


def test_a_page_on_another_origin_cannot_change_or_read_anything(jobs, home, browser_type):
    e, r, (a, b, c, f) = jobs
    before = state(r)
    evil_port = free_port()
    site = home / "evil"
    site.mkdir()
    server = serve_directory(site, evil_port)  # listening before the dashboard picks its port
    try:
        wait_until(lambda: _answers(evil_port), 15, "the other site", poll=0.1)
        with dashboard(e) as port:
            base = f"http://127.0.0.1:{port}"
            (site / "attack.html").write_text(f"""<!doctype html><title>cute cats</title>
<form id="f" method="POST" action="{base}/job/{a}/delete"></form>
<img src="{base}/requeue/narrate">
<script>
const post = (path) => fetch("{base}" + path, {{method: "POST", mode: "no-cors", credentials: "include"}});
Promise.allSettled([post("/queue/narrate/queued/empty"), post("/job/{f}/requeue"), post("/queue/narrate/failed/empty"),
                    post("/job/{b}/delete")])
  .then(() => setTimeout(() => document.getElementById("f").submit(), 300));
</script>""")
            browser = browser_type.launch(**launch_args(host_rules="MAP evil.example 127.0.0.1"))
            try:
                page = browser.new_page()
                page.goto(f"http://evil.example:{evil_port}/attack.html")
                # the form post lands on the dashboard, which refuses it
                page.wait_for_url(f"{base}/job/**")
                body = page.inner_text("body")
                assert "cross-site" in body, body
                time.sleep(0.5)
                assert state(r) == before

                # DNS rebinding: evil.example now resolves to 127.0.0.1, so the page is "same-origin"
                # with whatever listens there; the dashboard refuses the foreign Host.
                page.goto(f"http://evil.example:{port}/0/data/job/{a}.json")
                text = page.inner_text("body")
                assert "not served" in text and a not in text, text
                page.goto(f"http://evil.example:{port}/")
                assert "not served" in page.inner_text("body")
            finally:
                browser.close()
    finally:
        server.terminate()
        server.wait()
    assert state(r) == before


def test_dashboard_buttons_work_and_job_descriptions_cannot_run_script(jobs, home, voice_wav, page):
    e, r, (a, b, c, f) = jobs
    # A document's file name becomes part of the job description, which the job page renders as HTML.
    doc = home / "<img src=x onerror=this.alt=6*7+'zz'>.txt"
    doc.write_text(book(3))
    x = submit(e, doc, voice_wav, home / "out" / "x.wav")
    with dashboard(e) as port:
        base = f"http://127.0.0.1:{port}"
        page.goto(f"{base}/0/view/job/{x}")
        page.wait_for_function(
            "document.querySelector('#job-data img') && document.querySelector('#job-data img').complete"
        )
        time.sleep(0.5)  # the error event fires after `complete`
        assert page.evaluate("document.querySelector('#job-data img').alt") != "42zz", "injected script ran"

        # Delete from the queued list, with the confirmation dialog.
        page.goto(f"{base}/0/view/jobs/narrate/queued/8/asc/1")
        page.locator(f'tr[data-job-id="{b}"] [data-role=delete-job-btn]').click()
        page.locator("#confirmation-modal-yes").click()
        wait_until(lambda: b not in state(r)["jobs"], 15, "the delete", poll=0.1)

        # Delete from a job's own page.
        page.goto(f"{base}/0/view/job/{c}")
        page.wait_for_function("$('#job-data').text().includes('Description')")
        page.locator("#delete-job-btn").click()
        page.locator("#confirmation-modal-yes").click()
        wait_until(lambda: c not in state(r)["jobs"], 15, "the delete", poll=0.1)
        page.wait_for_url(f"{base}/")  # its script then opens the queues page (/): let that load finish

        # Requeue all failed jobs.
        page.goto(f"{base}/0/view/jobs/narrate/failed/8/asc/1")
        page.locator(f'tr[data-job-id="{f}"]').wait_for()
        page.locator("#requeue-all-btn").click()
        page.locator("#confirmation-modal-yes").click()
        wait_until(lambda: f in state(r)["queued"] and not state(r)["failed"], 15, "the requeue", poll=0.1)

        # Empty the queue.
        page.goto(f"{base}/0/view/jobs/narrate/queued/8/asc/1")
        page.locator(f'tr[data-job-id="{a}"]').wait_for()
        page.locator("#empty-btn").click()
        page.locator("#confirmation-modal-yes").click()
        wait_until(lambda: not state(r)["queued"], 15, "the empty queue", poll=0.1)
