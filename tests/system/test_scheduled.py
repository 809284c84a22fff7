"""`submit --at` / `--in`: the job waits in rq's ScheduledJobRegistry (JSON, like every narrate
job), shows as scheduled with its due time, and runs once due (moved by jobs.queue.due.enqueue_due,
which the scheduler loop calls; the tests call it from a thread)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

from helpers.books import write_docs
from helpers.fake import fake_env, synthesized
from helpers.ops import due_mover, narrate_keys, one_error_line, registries_holding, submit_json
from helpers.procs import narrate, start_worker, stop_worker, wait_for_job, wait_until
from helpers.servers import external_redis_url
from narrate.jobs.queue.due import enqueue_due


def test_a_job_due_in_two_seconds_waits_then_runs(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    [doc] = write_docs(home, {"later.txt": 4})
    t0 = datetime.now(UTC)
    [job] = submit_json(e, [doc], voice_wav, "-o", str(home / "out" / "later.wav"), "--in", "2s")
    t1 = datetime.now(UTC)
    due = datetime.fromisoformat(job["scheduled_for"])
    # 2 s after the submit ran (whole seconds, rounded up): between t0 and t1 however slowly the CLI started
    assert job["status"] == "scheduled" and 2 <= (due - t0).total_seconds() and (due - t1).total_seconds() <= 3, job
    st = json.loads(narrate(e, "status", job["id"], "--json").stdout)
    assert st["status"] == "scheduled" and st["scheduled_for"] == job["scheduled_for"]
    assert "due " in narrate(e, "status", job["id"]).stdout
    listed = json.loads(narrate(e, "list", "--status", "scheduled", "--json").stdout)
    assert listed["id"] == job["id"] and listed["scheduled_for"] == job["scheduled_for"]
    assert registries_holding(external_redis, job["id"]) == ["scheduled"]
    worker = start_worker(e)
    try:
        with due_mover(external_redis_url()) as moved:
            st = wait_for_job(job["id"], timeout=30)
        assert moved in ([], [job["id"]])  # moved once: by this mover or, first, by the worker's own scheduler
    finally:
        stop_worker(worker)
    assert st["status"] == "finished"
    assert datetime.fromisoformat(st["started_at"]) >= due  # not before its time
    assert len(synthesized(home)) == 4


def _dst_day(month: int) -> datetime:
    """The next last-Sunday-of-`month` still ahead (when Central European clocks change)."""
    today = datetime.now()
    for year in (today.year, today.year + 1):
        day = datetime(year, month + 1, 1) - timedelta(days=1) if month < 12 else datetime(year, 12, 31)
        day -= timedelta(days=(day.weekday() - 6) % 7)
        if day > today + timedelta(days=1):
            return day
    raise AssertionError("unreachable")


def test_at_across_a_daylight_saving_change(env, home, voice_wav, external_redis):
    """Local times the clocks skip or repeat are refused with the offsets to choose from; the hour
    after the change is scheduled at the right UTC instant (TZ=Europe/Berlin)."""
    e = fake_env(env, home, TZ="Europe/Berlin")
    [doc] = write_docs(home, {"dst.txt": 2})
    base = ["submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "dst.mp3")]
    spring, autumn = _dst_day(3), _dst_day(10)
    skipped = one_error_line(narrate(e, *base, "--at", f"{spring:%Y-%m-%d}T02:30"))
    assert "does not exist in local time" in skipped, skipped
    twice = one_error_line(narrate(e, *base, "--at", f"{autumn:%Y-%m-%d}T02:30"))
    assert "happens twice in local time" in twice and "+02:00 or +01:00" in twice, twice
    assert narrate_keys(external_redis) == []
    [job] = submit_json(e, [doc], voice_wav, "-o", str(home / "out" / "dst.mp3"), "--at", f"{autumn:%Y-%m-%d}T03:30")
    assert job["scheduled_for"] == f"{autumn:%Y-%m-%d}T02:30:00+00:00"  # CET (+01:00) after the change
    [same] = submit_json(
        e, [doc], voice_wav, "-o", str(home / "out" / "dst.mp3"), "--at", f"{autumn:%Y-%m-%d}T02:30+02:00"
    )
    assert same["id"] == job["id"] and same["duplicate"] == "scheduled"  # the due time is not the job's identity


def test_a_scheduled_job_whose_document_expired_fails_clearly(env, home, voice_wav, external_redis):
    """The stored document outlives the wait (it is kept NARRATE_KEEP_DAYS after the due time);
    if it is gone anyway, the job fails at once with what to do, and submitting again runs it."""
    e = fake_env(env, home, NARRATE_KEEP_DAYS="2")
    [doc] = write_docs(home, {"far.txt": 3})
    out = ("-o", str(home / "out" / "far.mp3"))
    [far] = submit_json(e, [doc], voice_wav, *out, "--in", "40d")
    [doc_key] = external_redis.keys("narrate:doc:*")
    assert external_redis.ttl(doc_key) > 42 * 86400  # 40 days of waiting + 2 kept after
    assert narrate(e, "cancel", far["id"]).returncode == 0
    [soon] = submit_json(e, [doc], voice_wav, *out, "--in", "1s")
    external_redis.delete(doc_key)  # as if it had expired
    moved = wait_until(lambda: enqueue_due(external_redis, ["narrate-high", "narrate", "narrate-low"]), 5, "due")
    assert moved == [soon["id"]]
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(soon["id"])
    assert (
        st["status"] == "failed" and "is no longer stored (it expired or was removed); submit it again" in st["error"]
    ), st
    again = narrate(e, "submit", str(doc), "--voice", str(voice_wav), *out)
    assert again.returncode == 0 and "resumed" in again.stderr
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(soon["id"])["status"] == "finished"
    assert os.path.exists(home / "out" / "far.mp3")
