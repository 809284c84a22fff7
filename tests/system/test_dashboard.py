"""`narrate dashboard`: rq-dashboard with JSON jobs, a working workers page while a worker is
busy, and basic auth."""

from __future__ import annotations

import base64
import json

import pytest
from helpers.books import book
from helpers.dashboard import dashboard, request
from helpers.fake import fake_env, synthesized, wait_synthesized
from helpers.ops import submit_book
from helpers.procs import start_worker, stop_worker, wait_for_job
from narrate.jobs.dashboard.app import make_app


def test_workers_page_works_while_a_worker_is_busy_with_a_json_job(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=100)
    job_id = submit_book(e, home, voice_wav, book(30))
    app = make_app(e["NARRATE_REDIS_URL"], "admin", "pw")
    client = app.test_client()
    site = {"base_url": "http://localhost:9181"}  # it answers only the Host names of 127.0.0.1:9181
    auth = {"Authorization": "Basic " + base64.b64encode(b"admin:pw").decode()}
    worker = start_worker(e)
    try:
        wait_synthesized(home, 2)
        assert client.get("/0/data/workers.json", **site).status_code == 401  # no credentials
        r = client.get("/0/data/workers.json", headers=auth, **site)
        assert r.status_code == 200, r.data[:300]
        assert job_id in json.dumps(r.get_json())  # the busy worker and its JSON job
        assert client.get(f"/0/data/job/{job_id}.json", headers=auth, **site).status_code == 200
        assert client.get("/0/data/queues.json", headers=auth, **site).status_code == 200
        assert wait_for_job(job_id)["status"] == "finished"
    finally:
        stop_worker(worker)


@pytest.mark.parametrize("how", ["delete", "empty started"])
def test_deleting_a_running_job_cancels_it(env, home, voice_wav, external_redis, how):
    """The rq-dashboard's Delete (or emptying the started list) of a running job would drop its record
    while its worker keeps synthesizing and then writes the output: the job is canceled instead,
    as `narrate cancel` does: it stops after its batch in flight, keeps its record, no output."""
    e = fake_env(env, home, delay_ms=100)
    job_id = submit_book(e, home, voice_wav, book(60))
    origin = {"Origin": "http://127.0.0.1:{port}"}
    worker = start_worker(e)
    try:
        wait_synthesized(home, 2)
        with dashboard(e) as port:
            same_site = {k: v.format(port=port) for k, v in origin.items()}
            path = f"/job/{job_id}/delete" if how == "delete" else "/queue/narrate/started/empty"
            reply = request(port, "POST", path, same_site)
            assert reply.status == 200, (reply.status, reply.text)
        assert wait_for_job(job_id, timeout=60)["status"] == "canceled"
    finally:
        stop_worker(worker)
    assert len(synthesized(home)) < 60 and not (home / "out" / "book.wav").exists()
