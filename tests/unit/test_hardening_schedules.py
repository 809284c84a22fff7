"""A recurring schedule survives what its folder holds: a document a reader cannot read is skipped
with its reason while the rest are submitted (it stopped the schedule for good: the tick failed and
backed off forever, "last run: never"); a tick that fails says why in `schedule list`; a scheduler
pass has a deadline; a full Redis is named."""

from __future__ import annotations

import json
import os
import time

import pytest
from helpers.cli import invoke
from helpers.sched import add, make_due, run_tick, skipped
from narrate.jobs.schedules import loop
from narrate.jobs.schedules.definitions import key
from narrate.jobs.settings import Settings


def _settle(path):
    os.utime(path, (time.time() - 600, time.time() - 600))


def test_a_document_no_reader_can_read_is_skipped_and_the_tick_goes_on(env, home, voice_wav, external_redis):
    watch = home / "inbox"
    watch.mkdir()
    (watch / "bad.html").write_bytes(b'<html><head><meta charset="undefined"></head><body><p>Hi.</p></body></html>')
    (watch / "deep.html").write_text("<html><body>" + "<div>" * 5000 + "<p>x.</p>" + "</div>" * 5000 + "</body></html>")
    (watch / "good.txt").write_text("A document that reads. It has two sentences.")
    for p in watch.iterdir():
        _settle(p)
    e = env | {"NARRATE_SCHEDULE_SETTLE_S": "0"}
    add(e, "inbox", watch, voice_wav, run=invoke)
    report = run_tick(e, "inbox", run=invoke)
    assert [d["document"] for d in report["submitted"]] == ["good.txt"]
    reasons = {name: rec["reason"] for name, rec in skipped(external_redis, "inbox").items()}
    assert "bad.html cannot be read as html" in reasons["bad.html"], reasons
    assert "nested more than 2048 elements deep" in reasons["deep.html"], reasons
    shown = invoke(e, "schedule", "list")
    assert "skipped: bad.html: " in shown.stdout and "last run: never" not in shown.stdout


def test_a_failing_tick_says_why_in_schedule_list(env, home, voice_wav, external_redis, monkeypatch):
    watch = home / "inbox"
    watch.mkdir()
    add(env, "nightly", watch, voice_wav, run=invoke)

    def broken(*args, **kwargs):
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(loop, "tick_if_due", broken)
    loop.Scheduler(Settings.from_env(), external_redis).step()
    problem = json.loads(external_redis.get(key("nightly", "problem")))
    assert "its tick failed (RuntimeError: the disk went away); trying again in" in problem["reason"]
    shown = invoke(env, "schedule", "list")
    assert "problem: its tick failed (RuntimeError: the disk went away)" in shown.stdout, shown.stdout


def test_due_jobs_move_while_a_tick_is_busy(env, home, voice_wav, external_redis, monkeypatch):
    """A tick that takes long (a big folder, a slow document) held back every `--in` job: one due in
    30 s stayed scheduled. The scheduler moves due jobs in a thread of its own."""
    import threading

    from narrate.jobs.api.status import status

    watch = home / "inbox"
    watch.mkdir()
    add(env, "busy", watch, voice_wav, run=invoke)
    make_due(external_redis, "busy")
    entered, release = threading.Event(), threading.Event()

    def slow_tick(*args, **kwargs):
        entered.set()
        release.wait(30)

    monkeypatch.setattr(loop, "tick_if_due", slow_tick)
    doc = home / "later.txt"
    doc.write_text("Due in a second.")
    ran = invoke(env, "submit", str(doc), "--voice", str(voice_wav), "--in", "1s", "--json")
    assert ran.returncode == 0, ran.stderr
    job_id = json.loads(ran.stdout)["id"]
    stop = threading.Event()
    sched = loop.Scheduler(Settings.from_env(scheduler_interval_s=0.2), external_redis)
    server = threading.Thread(target=sched.serve, args=(stop,), daemon=True)
    server.start()
    try:
        assert entered.wait(10), "the tick did not start"
        deadline = time.monotonic() + 15
        while status(external_redis, job_id)["status"] == "scheduled" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status(external_redis, job_id)["status"] == "queued"  # moved while the tick still runs
        assert not release.is_set() and server.is_alive()
    finally:
        release.set()
        stop.set()
        server.join(10)


def test_a_full_redis_is_named_when_part_audio_is_stored(home):
    """The server's memory is set below what it holds, so every write is refused whatever the moment. (It was
    set to the memory used plus 1 KB: read right after the 2 MB SET, that figure still counted the SET's 2 MB
    query buffer, which the server frees on its own clock (clientsCron) later; on a machine where it was freed
    before the upload, the upload fitted, and the test failed on busy machines and passed alone.)"""
    import numpy as np
    from helpers.servers import PrivateRedis
    from narrate.jobs.book.checkpoints import Checkpoint, checkpoint_key
    from narrate.jobs.fanout import partaudio
    from narrate.jobs.ffmpeg import ffmpeg_exe

    server = PrivateRedis()
    server.start()
    try:
        import redis

        r = redis.Redis.from_url(server.url)
        r.config_set("maxmemory-policy", "noeviction")
        r.set("filler", b"x" * 2_000_000)
        r.config_set("maxmemory", "1mb")  # below the 2 MB filler: full, and staying full
        up = partaudio.Uploader(r, "book1", ffmpeg_exe(None), 3600)
        rng = np.random.default_rng(1)
        pcm = rng.integers(-9000, 9000, 48_000, dtype=np.int16)
        up.pending.append((0, checkpoint_key("s", "v", "m", "q", 0, 1), Checkpoint(pcm, 25, False, 1)))
        with pytest.raises(partaudio.ServerFull, match="the Redis server is full"):
            up.flush()
    finally:
        server.close()


def test_status_and_list_say_when_the_server_is_full(env):
    """A full server (maxmemory, noeviction) refuses every write, so a running job can record neither
    its progress nor its failure: the book sat at "started, ETA 5h" and nothing said why."""
    import redis
    from helpers.servers import PrivateRedis
    from narrate.jobs.api.submit import JOB_FUNCTION
    from narrate.jobs.server.records import queue

    server = PrivateRedis()
    server.start()
    try:
        r = redis.Redis.from_url(server.url)
        job = queue(r, "narrate").enqueue(JOB_FUNCTION, "{}", job_id="narrate-waiting")
        e = env | {"NARRATE_REDIS_URL": server.url}
        calm = invoke(e, "status", job.id)
        assert calm.returncode == 0 and "full" not in calm.stderr
        r.config_set("maxmemory-policy", "noeviction")
        r.set("filler", b"x" * 2_000_000)
        r.config_set("maxmemory", "1")  # below any used memory: full whatever the server frees meanwhile
        for args in (("status", job.id), ("list",)):
            ran = invoke(e, *args)
            assert ran.returncode == 0 and "warning: the Redis server is full" in ran.stderr, (args, ran.stderr)
    finally:
        server.close()
