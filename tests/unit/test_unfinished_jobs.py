"""`narrate export` and `narrate fetch` of a job that has not finished: the job's real state in words
(why it failed, and the command that moves it on), never rq's `JobStatus.FAILED`, and a non-zero exit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from helpers.cli import invoke
from narrate.jobs.server.records import queue
from rq.job import JobStatus


def _job(r, job_id: str):
    from narrate.jobs.api.submit import JOB_FUNCTION

    return queue(r, "narrate").enqueue(JOB_FUNCTION, "{}", job_id=job_id)


def _in_state(r, state: str):
    from narrate.jobs.queue.lifecycle import fail_for_good

    job_id = f"narrate-{state}-one"
    if state == "scheduled":
        return queue(r, "narrate").enqueue_at(datetime.now(UTC) + timedelta(hours=3), "narrate.x", "{}", job_id=job_id)
    job = _job(r, job_id)
    if state == "failed":
        fail_for_good(r, job, "ValueError: the voice sample is silent")
    elif state == "canceled":
        job.cancel()
    elif state in ("started", "stopped", "deferred"):
        job.set_status(JobStatus(state))
    return job


SAID = {
    "failed": "it failed: ValueError: the voice sample is silent; `narrate resume narrate-failed-one` retries it",
    "canceled": "it was canceled; `narrate resume narrate-canceled-one` runs it again",
    "stopped": "it was stopped; `narrate resume narrate-stopped-one` runs it again",
    "started": "it is still running",
    "queued": "it is queued and has not started yet; `narrate watch narrate-queued-one` follows it",
    "scheduled": "it is scheduled for ",
    "deferred": "it is waiting for its parts to finish",
}


@pytest.mark.parametrize("state", sorted(SAID))
def test_export_and_fetch_of_an_unfinished_job_say_its_state_in_words(env, home, external_redis, state):
    job = _in_state(external_redis, state)
    (home / "lib").mkdir()
    ran = {
        "export": invoke(env, "export", job.id, "--library", str(home / "lib")),
        "fetch": invoke(env, "fetch", job.id, "-o", str(home / "copy.mp3")),
    }
    for verb, done in ran.items():
        assert done.returncode != 0, (verb, done.stdout)
        line = done.stderr.strip()
        assert line.startswith(f"Error: cannot {verb} job {job.id}: {SAID[state]}"), (verb, line)
        assert "JobStatus" not in line and "not finished yet" not in line, line
        assert len(line.splitlines()) == 1, line
    assert not (home / "copy.mp3").exists() and not any((home / "lib").iterdir())
