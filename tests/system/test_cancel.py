"""`narrate cancel`: queued and scheduled jobs are removed; a running one stops after its batch in
flight, keeps its checkpoints (`narrate resume` continues it) and ends canceled, not requeued. rq's
own cancel, its stop-job command and rq-dashboard's Delete stop the work the same way."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from helpers.books import write_docs
from helpers.fake import fake_env, synthesized, wait_synthesized
from helpers.ops import one_error_line, registries_holding, rq_state, submit_json
from helpers.procs import NARRATE, child_pid, narrate, start_worker, stop_worker, wait_for_job, wait_until
from narrate.jobs.queue.cancel import WORDS, Cancel
from narrate.jobs.queue.due import enqueue_due
from rq.command import send_stop_job_command
from rq.job import cancel_job
from rq.serializers import JSONSerializer


def checkpoint_files(home) -> int:
    return sum(1 for p in (home / "checkpoints").rglob("*") if p.is_file())


def test_cancel_queued_scheduled_twice_unknown_and_finished(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=1)
    a, b, c = write_docs(home, {"a.txt": 2, "b.txt": 2, "c.txt": 2})
    [ja, jb] = submit_json(e, [a, b], voice_wav, "-o", str(home / "out"))
    [jc] = submit_json(e, [c], voice_wav, "-o", str(home / "out"), "--in", "1s")
    external_redis.zadd("rq:canceled:narrate", {"narrate-long-expired": 1})  # rq never drops these itself
    out = narrate(e, "cancel", ja["id"], jc["id"])
    assert out.returncode == 0 and out.stdout.splitlines() == [f"{ja['id']}: canceled", f"{jc['id']}: canceled"]
    twice = narrate(e, "cancel", ja["id"])
    assert twice.returncode == 0 and twice.stdout.strip() == f"{ja['id']}: already canceled"
    assert registries_holding(external_redis, ja["id"]) == ["canceled"] == registries_holding(external_redis, jc["id"])
    assert 0 < external_redis.ttl(f"rq:job:{ja['id']}") <= 30 * 86400  # kept like a failed job, then gone
    assert external_redis.zscore("rq:canceled:narrate", "narrate-long-expired") is None
    time.sleep(2.1)
    assert enqueue_due(external_redis, ["narrate"]) == []  # a canceled scheduled job never becomes due
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert [rq_state(external_redis, j["id"]) for j in (ja, jb, jc)] == ["canceled", "finished", "canceled"]
    assert not (home / "out" / "a.mp3").exists() and (home / "out" / "b.mp3").exists()
    assert "no job 'narrate-nope'" in one_error_line(narrate(e, "cancel", "narrate-nope"))
    finished = one_error_line(narrate(e, "cancel", jb["id"]))
    assert f"job {jb['id']} already finished; there is nothing to cancel" in finished
    mixed = narrate(e, "cancel", "narrate-nope", ja["id"])  # each job on its own: the known one is reported
    assert mixed.returncode == 1 and f"{ja['id']}: already canceled" in mixed.stdout and "no job" in mixed.stderr


def test_a_running_job_stops_after_its_batch_keeps_checkpoints_and_resumes(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=60)  # batches of 4 sentences, 0.24 s each
    [job] = submit_json(e, write_docs(home, {"long.txt": 40}), voice_wav, "-o", str(home / "out"))
    worker = start_worker(e)
    try:
        wait_synthesized(home, 8)
        out = narrate(e, "cancel", job["id"])
        asked_at = len(synthesized(home))
        assert out.returncode == 0 and out.stdout.strip() == f"{job['id']}: {WORDS[Cancel.STOPPING]}"
        st = wait_for_job(job["id"], timeout=20)
        assert st["status"] == "canceled"
        stopped_at = len(synthesized(home))
        assert stopped_at - asked_at <= 8 and stopped_at < 40  # within the batch in flight (and the one being asked)
        done = st["progress"]["done"]
        assert done == checkpoint_files(home) and stopped_at - 4 <= done <= stopped_at  # every finished one kept
        assert registries_holding(external_redis, job["id"]) == ["canceled"]  # not requeued
        assert not (home / "out" / "long.mp3").exists()
        time.sleep(0.5)
        assert len(synthesized(home)) == stopped_at and child_pid(home, worker)[0] == "idle"
        assert narrate(e, "resume", job["id"]).stdout.strip() == f"{job['id']}: requeued"
        assert wait_for_job(job["id"], timeout=30)["status"] == "finished"
    finally:
        stop_worker(worker)
    indices = sorted(i for i, _ in synthesized(home))
    assert sorted(set(indices)) == list(range(40))  # the resumed job synthesized what was missing,
    assert len(indices) - 40 <= 4  # and again only the unfinished sentences the cancel dropped (one batch at most)


def _rq_cancel(r, job_id):
    cancel_job(job_id, connection=r, serializer=JSONSerializer)


def _dashboard_delete(r, job_id):
    from rq.job import Job

    Job.fetch(job_id, connection=r, serializer=JSONSerializer).delete()  # what rq-dashboard's Delete does


def _stop_job_command(r, job_id):
    send_stop_job_command(r, job_id, serializer=JSONSerializer)


@pytest.mark.parametrize("action", [_rq_cancel, _dashboard_delete, _stop_job_command], ids=lambda f: f.__name__)
def test_rq_cancel_dashboard_delete_and_stop_job_stop_the_work(action, env, home, voice_wav, external_redis):
    """Before, the worker (a SimpleWorker) ran such a job to its end and wrote its output: rq's
    stop-job command only tries to kill a work horse that a SimpleWorker does not have."""
    e = fake_env(env, home, delay_ms=60, NARRATE_CACHE_MAX_GB="0")  # the next job keeps no checkpoints
    [job] = submit_json(e, write_docs(home, {"gone.txt": 40}), voice_wav, "-o", str(home / "out"))
    worker = start_worker(e)
    try:
        wait_synthesized(home, 8)
        action(external_redis, job["id"])
        asked_at = len(synthesized(home))
        wait_until(lambda: child_pid(home, worker)[0] == "idle", 20, "the worker to be idle")
        stopped_at = len(synthesized(home))
        assert stopped_at - asked_at <= 8 and stopped_at < 40
        assert not (home / "out" / "gone.mp3").exists()
        if action is _dashboard_delete:  # gone without a trace: no half-written record
            assert external_redis.exists(f"rq:job:{job['id']}") == 0
            assert registries_holding(external_redis, job["id"]) == []
        else:
            assert rq_state(external_redis, job["id"]) == "canceled"
            assert registries_holding(external_redis, job["id"]) == ["canceled"]
        # the worker goes on with the next job
        [nxt] = submit_json(e, write_docs(home, {"next.txt": 3}), voice_wav, "-o", str(home / "out"))
        assert wait_for_job(nxt["id"], timeout=20)["status"] == "finished"
    finally:
        stop_worker(worker)
    # the canceled job's checkpoints stay: every sentence it finished (those in flight were dropped)
    assert stopped_at - 4 <= checkpoint_files(home) <= stopped_at


def test_cancel_racing_with_completion_leaves_each_job_consistent(env, home, voice_wav, external_redis):
    """Six jobs, one `narrate cancel` of all while the worker goes through them: every job ends
    either finished with its output, or canceled with none, and sits in one registry. The first
    three are short (one of them may finish while the cancel runs: the race); the last three last
    seconds each, so that a cancel slowed by a busy machine still finds work left to cancel."""
    e = fake_env(env, home, delay_ms=60)
    docs = write_docs(home, {f"r{k}.txt": 6 if k < 3 else 60 for k in range(6)})
    jobs = submit_json(e, docs, voice_wav, "-o", str(home / "out"))
    worker = start_worker(e)
    try:
        wait_until(lambda: rq_state(external_redis, jobs[1]["id"]) == "finished", 20, "two jobs done", poll=0.01)
        out = narrate(e, "cancel", *(j["id"] for j in jobs))
        ends = [wait_for_job(j["id"], timeout=20)["status"] for j in jobs]
    finally:
        stop_worker(worker)
    assert ends[0] == "finished" and "canceled" in ends, (ends, out.stdout, out.stderr)
    for j, end, doc in zip(jobs, ends, docs, strict=True):
        output = home / "out" / f"{doc.stem}.mp3"
        assert output.exists() == (end == "finished"), (j["id"], end)
        assert registries_holding(external_redis, j["id"]) == ["finished" if end == "finished" else "canceled"]


def test_a_canceled_job_whose_worker_dies_stays_canceled(env, home, voice_wav, external_redis):
    """Canceled while stuck in a batch (a hang: no signal handler runs), then the worker is killed:
    its successor records the job as canceled instead of requeueing it."""
    e = fake_env(env, home, delay_ms=30, NARRATE_FAKE_HANG_ON="STUCK")
    doc = home / "stuck.txt"
    doc.write_text("One sentence here. Another one. A third one. The fourth. Now STUCK forever. Never reached.")
    [job] = submit_json(e, [doc], voice_wav, "-o", str(home / "out"))
    worker = start_worker(e)
    try:
        wait_synthesized(home, 4)
        time.sleep(0.3)  # inside the hanging batch
        out = narrate(e, "cancel", job["id"])
        assert out.stdout.strip() == f"{job['id']}: {WORDS[Cancel.STOPPING]}", out
        again = narrate(e, "cancel", job["id"])
        assert again.stdout.strip() == f"{job['id']}: already stopping (canceled)"
        os.kill(child_pid(home, worker)[1], signal.SIGKILL)
        assert wait_for_job(job["id"], timeout=30)["status"] == "canceled"
    finally:
        log = stop_worker(worker)
    assert "requeued abandoned" not in log
    assert registries_holding(external_redis, job["id"]) == ["canceled"]


def test_deleting_the_job_of_narrate_run_stops_it_without_output(env, home, voice_wav, external_redis):
    """`narrate run` runs its own worker: a Delete in the dashboard stops it too (it used to write
    the output and exit 0, leaving a job record that nobody had asked for)."""
    e = fake_env(env, home, delay_ms=60)
    [doc] = write_docs(home, {"run.txt": 40})
    out = home / "out" / "run.mp3"
    args = ["run", str(doc), "--voice", str(voice_wav), "-o", str(out)]
    run = subprocess.Popen([*NARRATE, *args], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_synthesized(home, 8)
    [key] = external_redis.keys("rq:job:*")
    _dashboard_delete(external_redis, key.decode().removeprefix("rq:job:"))
    _, err = run.communicate(timeout=30)
    assert run.returncode == 1, err
    assert err.strip().splitlines()[-1].endswith("was deleted while it ran; no output was written"), err
    assert not out.exists() and len(synthesized(home)) < 40
    assert external_redis.keys("rq:job:*") == [] and external_redis.smembers("rq:queues") == set()
