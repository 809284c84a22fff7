"""What a queue operation does with stale or hostile state, said in one line and leaving nothing
half-made: a queue key of the wrong type, two outputs that are one file on macOS, `fetch -o`
checked before anything is asked of another host, `resume` naming the canceled jobs it leaves, a
resumed job's end time, the dashboard's credentials and its bound on threads, canceled jobs on
`/narrate`, `bench --variants`."""

from __future__ import annotations

import socket
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.cli import invoke
from helpers.servers import free_port
from narrate.jobs.errors import BadInput
from narrate.jobs.fanout.fetch import destination
from narrate.jobs.server.records import queue
from rq.job import JobStatus


def _doc(home, name="book.txt", text="One sentence here. And a second one."):
    path = home / name
    path.write_text(text)
    return path


def test_a_queue_key_of_the_wrong_type_refuses_the_submit_and_stores_nothing(env, home, voice_wav, external_redis):
    """The job hash was saved as queued with no queue entry; afterwards no command could run it."""
    external_redis.set("rq:queue:narrate", "written by something else")
    ran = invoke(env, "submit", str(_doc(home)), "--voice", str(voice_wav))
    assert ran.returncode == 1 and "rq:queue:narrate holds a string, not the list" in ran.stderr, ran.stderr
    assert sorted(k.decode() for k in external_redis.keys("*")) == ["rq:queue:narrate"]


def test_two_outputs_that_differ_only_in_case_are_not_pending_at_once(env, home, voice_wav, external_redis):
    first = invoke(env, "submit", str(_doc(home)), "--voice", str(voice_wav), "-o", "BOOK.mp3")
    assert first.returncode == 0, first.stderr
    second = invoke(
        env, "submit", str(_doc(home, "other.txt", "Another text.")), "--voice", str(voice_wav), "-o", "book.mp3"
    )
    assert second.returncode == 1 and "differs only in case from BOOK.mp3" in second.stderr, second.stderr
    same = invoke(env, "submit", str(_doc(home)), "--voice", str(voice_wav), "-o", "BOOK.mp3")
    assert same.returncode == 0 and "identical job" in same.stderr  # the same job again is fine
    job_id = first.stdout.strip()
    job = queue(external_redis, "narrate").fetch_job(job_id)
    job.cancel()  # no longer pending: the other name may be taken
    third = invoke(
        env, "submit", str(_doc(home, "other.txt", "Another text.")), "--voice", str(voice_wav), "-o", "book.mp3"
    )
    assert third.returncode == 0, third.stderr


def test_fetch_checks_where_it_writes_first(tmp_path):
    with pytest.raises(BadInput, match="-o is empty"):
        destination("", "book.mp3")
    with pytest.raises(BadInput, match="does not exist"):
        destination(tmp_path / "missing" / "x.mp3", "book.mp3")
    assert destination(tmp_path, "book.mp3") == tmp_path / "book.mp3"  # a folder: the output's own name in it
    (tmp_path / "book.mp3").write_bytes(b"mine")
    with pytest.raises(BadInput, match="is a file already; give another name, or pass --overwrite"):
        destination(tmp_path / "book.mp3", "book.mp3")
    assert destination(tmp_path / "book.mp3", "book.mp3", overwrite=True) == tmp_path / "book.mp3"
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "book.mp3").mkdir()
    with pytest.raises(BadInput, match="is a folder already"):
        destination(tmp_path / "d", "book.mp3")


def _job(r, job_id: str):
    from narrate.jobs.api.submit import JOB_FUNCTION

    q = queue(r, "narrate")
    return q.enqueue(JOB_FUNCTION, "{}", job_id=job_id)


def test_resume_without_ids_names_the_canceled_jobs_it_leaves(env, external_redis):
    _job(external_redis, "narrate-canceled-one").cancel()
    ran = invoke(env, "resume")
    assert ran.returncode == 0
    assert "narrate-canceled-one: left alone (canceled: `narrate resume narrate-canceled-one` runs it again)" in (
        ran.stdout
    )


def test_a_resumed_job_has_no_end_time_before_its_next_start(external_redis):
    from narrate.jobs.queue.lifecycle import fail_for_good, requeue_front
    from narrate.jobs.server.records import fetch

    job = _job(external_redis, "narrate-failed-one")
    job.started_at = datetime.now(UTC)
    job.ended_at = datetime.now(UTC)
    job.save()
    fail_for_good(external_redis, job, "boom")
    requeue_front(external_redis, fetch(external_redis, job.id), "resume")
    again = fetch(external_redis, job.id)
    assert again.get_status() == JobStatus.QUEUED and again.ended_at is None


@pytest.mark.parametrize(("user", "password"), [(" ", "secret"), ("ann", "   "), ("\t", "\t")])
def test_blank_dashboard_credentials_are_refused(user, password):
    from narrate.jobs.dashboard.app import check_exposure

    with pytest.raises(BadInput, match="must not be blank"):
        check_exposure("0.0.0.0", user, password)
    with pytest.raises(BadInput, match="must not be blank"):
        check_exposure("127.0.0.1", user, password)


def test_the_dashboard_serves_a_bounded_number_of_requests_at_once():
    """One thread per connection, unbounded: every idle connection held a thread. Now at most
    `threads`; idle connections are closed after their timeout and a request then gets through."""
    from flask import Flask
    from narrate.jobs.dashboard import app as dashboard_app

    app = Flask("probe")
    app.add_url_rule("/", "ok", lambda: "ok")
    port = free_port()
    server = threading.Thread(target=dashboard_app.serve, args=(app, "127.0.0.1", port, 3, 1.0), daemon=True)
    server.start()
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    before = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(9)]
    time.sleep(0.5)
    assert threading.active_count() - before <= 3
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:  # served once the idle ones time out
        s.sendall(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        assert s.recv(1024).startswith(b"HTTP/1.")
    for s in idle:
        s.close()


def test_canceled_jobs_are_on_the_progress_page(external_redis):
    from narrate.jobs.dashboard.overview import queue_view

    _job(external_redis, "narrate-kept").cancel()
    view = queue_view(external_redis, queue(external_redis, "narrate"))
    assert view.counts["canceled"] == 1 and [row.id for row in view.rows["canceled"]] == ["narrate-kept"]


def test_bench_variants_are_checked(env):
    ran = invoke(env, "bench", "--variants", "plain,fast")
    assert ran.returncode == 1 and "--variants 'plain,fast': choose from plain, mlx-batch, static, continuous" in (
        ran.stderr
    )


def test_a_running_job_asked_to_cancel_is_listed_as_stopping(env, external_redis):
    from narrate.jobs.api.listing import list_jobs
    from narrate.jobs.queue.lifecycle import CANCEL_FIELD
    from rq.registry import StartedJobRegistry

    job = _job(external_redis, "narrate-running-one")
    q = queue(external_redis, "narrate")
    q.remove(job.id)
    job.set_status(JobStatus.STARTED)
    external_redis.zadd(StartedJobRegistry(queue=q).key, {f"{job.id}:exec1": time.time() + 600})  # as rq 2 writes it
    external_redis.hset(job.key, CANCEL_FIELD, "narrate cancel")
    [row] = list_jobs(external_redis, "narrate", Path(env["NARRATE_OUTPUT_DIR"]))
    assert row["status"] == "started" and row["stopping"] is True
    ran = invoke(env, "list")
    assert ran.returncode == 0 and "stopping" in ran.stdout, ran.stdout
