"""`submit --at` / `--in`: the job waits in rq's ScheduledJobRegistry (JSON, like every narrate
job), shows as scheduled with its due time, and runs once due (moved by jobs.queue.due.enqueue_due,
which the scheduler loop calls; the tests call it from a thread)."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta

from conftest import EXTERNAL_REDIS_URL, narrate, start_worker, stop_worker, wait_for_job, wait_until
from faults import fake_env, synthesized
from narrate.jobs.queue.due import enqueue_due
from opskit import due_mover, narrate_keys, one_error_line, registries_holding, submit_json, write_docs


def test_a_job_due_in_two_seconds_waits_then_runs(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    [doc] = write_docs(home, {"later.txt": 4})
    t0 = datetime.now(UTC)
    [job] = submit_json(e, [doc], voice_wav, "-o", str(home / "out" / "later.wav"), "--in", "2s")
    due = datetime.fromisoformat(job["scheduled_for"])
    assert job["status"] == "scheduled" and 2 <= (due - t0).total_seconds() <= 5, job  # whole seconds, rounded up
    st = json.loads(narrate(e, "status", job["id"], "--json").stdout)
    assert st["status"] == "scheduled" and st["scheduled_for"] == job["scheduled_for"]
    assert "due " in narrate(e, "status", job["id"]).stdout
    listed = json.loads(narrate(e, "list", "--status", "scheduled", "--json").stdout)
    assert listed["id"] == job["id"] and listed["scheduled_for"] == job["scheduled_for"]
    assert registries_holding(external_redis, job["id"]) == ["scheduled"]
    worker = start_worker(e)
    try:
        with due_mover(EXTERNAL_REDIS_URL) as moved:
            st = wait_for_job(job["id"], timeout=30)
        assert moved in ([], [job["id"]])  # moved once: by this mover or, first, by the worker's own scheduler
    finally:
        stop_worker(worker)
    assert st["status"] == "finished"
    assert datetime.fromisoformat(st["started_at"]) >= due  # not before its time
    assert len(synthesized(home)) == 4


def test_bad_times_are_one_line_and_store_nothing(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    [doc] = write_docs(home, {"d.txt": 2})
    base = ["submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "d.mp3")]
    past = (datetime.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    cases = {
        ("--at", past): "is in the past",
        ("--at", "tomorrow at two"): "is not a date and time",
        ("--at", "2026-13-01T02:00"): "is not a date and time",
        ("--in", "-5m"): "is not a delay (a negative delay",
        ("--in", "0s"): "is no delay at all",
        ("--in", "90"): "is not a delay",
        ("--in", "2 fortnights"): "is not a delay",
        ("--in", "400d"): "more than 365 days ahead",
        ("--in", "2h", "--at", "2099-01-01T00:00"): "give --at or --in, not both",
    }
    for extra, want in cases.items():
        assert want in one_error_line(narrate(e, *base, *extra)), extra
    assert narrate_keys(external_redis) == []


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
    [same] = submit_json(e, [doc], voice_wav, "-o", str(home / "out" / "dst.mp3"),
                         "--at", f"{autumn:%Y-%m-%d}T02:30+02:00")  # fmt: skip
    assert same["id"] == job["id"] and same["duplicate"] == "scheduled"  # the due time is not the job's identity


def test_resubmitting_a_scheduled_job_is_the_same_job(env, home, voice_wav, external_redis):
    """Sooner, later or at another priority: the identical book is the job already scheduled;
    a canceled one submitted with --at is scheduled again."""
    e = fake_env(env, home)
    [doc] = write_docs(home, {"same.txt": 2})
    out = ("-o", str(home / "out" / "same.mp3"))
    [first] = submit_json(e, [doc], voice_wav, *out, "--in", "1h")
    again = narrate(e, "submit", str(doc), "--voice", str(voice_wav), *out, "--priority", "high")
    assert again.returncode == 0 and again.stdout.strip() == first["id"]
    assert f"identical job {first['id']} already scheduled for" in again.stderr
    assert narrate(e, "cancel", first["id"]).returncode == 0
    [re] = submit_json(e, [doc], voice_wav, *out, "--in", "2h")
    assert re["id"] == first["id"] and re["duplicate"] == "rescheduled"
    assert registries_holding(external_redis, first["id"]) == ["scheduled"]
    score = external_redis.zscore("rq:scheduled:narrate", first["id"])
    assert abs(score - (time.time() + 7200)) < 30


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
    assert st["status"] == "failed" and "is no longer stored (it expired or was removed); submit it again" in st[
        "error"], st  # fmt: skip
    again = narrate(e, "submit", str(doc), "--voice", str(voice_wav), *out)
    assert again.returncode == 0 and "resumed" in again.stderr
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(soon["id"])["status"] == "finished"
    assert os.path.exists(home / "out" / "far.mp3")
