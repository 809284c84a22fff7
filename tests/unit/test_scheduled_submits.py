"""`submit --at` / `--in` refusals, and a scheduled job submitted again being the same job."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from helpers.books import write_docs
from helpers.cli import invoke
from helpers.fake import fake_env
from helpers.ops import narrate_keys, one_error_line, registries_holding, submit_json


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
        assert want in one_error_line(invoke(e, *base, *extra)), extra
    assert narrate_keys(external_redis) == []


def test_resubmitting_a_scheduled_job_is_the_same_job(env, home, voice_wav, external_redis):
    """Sooner, later or at another priority: the identical book is the job already scheduled;
    a canceled one submitted with --at is scheduled again."""
    e = fake_env(env, home)
    [doc] = write_docs(home, {"same.txt": 2})
    out = ("-o", str(home / "out" / "same.mp3"))
    [first] = submit_json(e, [doc], voice_wav, *out, "--in", "1h", run=invoke)
    again = invoke(e, "submit", str(doc), "--voice", str(voice_wav), *out, "--priority", "high")
    assert again.returncode == 0 and again.stdout.strip() == first["id"]
    assert f"identical job {first['id']} already scheduled for" in again.stderr
    assert invoke(e, "cancel", first["id"]).returncode == 0
    [re] = submit_json(e, [doc], voice_wav, *out, "--in", "2h", run=invoke)
    assert re["id"] == first["id"] and re["duplicate"] == "rescheduled"
    assert registries_holding(external_redis, first["id"]) == ["scheduled"]
    score = external_redis.zscore("rq:scheduled:narrate", first["id"])
    assert abs(score - (time.time() + 7200)) < 30
