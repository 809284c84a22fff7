"""The scheduler loop in real processes: `narrate scheduler` and the `narrate worker` supervisor's
thread run due ticks exactly once (two schedulers at once, missed ticks caught up once, a clock
that went back), and move jobs submitted for later into their queue."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

from helpers.books import write_docs as docs_in
from helpers.procs import narrate, start_worker, stop_worker, wait_for_job, wait_until
from helpers.sched import INTERVAL_S, add, listing, make_due, queued, sched_env, start_scheduler, state, wait_runs
from narrate.jobs.schedules import cron
from narrate.jobs.server.records import queue

N = 40


def test_two_schedulers_run_a_due_tick_exactly_once(env, home, voice_wav, external_redis):
    e = sched_env(env, home)
    docs_in(home / "w", N)
    add(e, "nightly", home / "w", voice_wav)
    schedulers = [start_scheduler(e), start_scheduler(e)]
    try:
        wait_until(lambda: len(listing(e)["schedulers"]) == 2, 30, "two schedulers")
        make_due(external_redis, "nightly", days=5)  # five missed ticks
        st = wait_runs(external_redis, "nightly", 1)
        time.sleep(10 * INTERVAL_S)
        assert state(external_redis, "nightly")["runs"] == 1  # one catch-up tick, by one scheduler
        tz = listing(e)["schedules"][0]["tz"]
        assert st["last_tick"] == cron.previous_tick("0 2 * * *", tz, time.time())
        jobs = queued(external_redis)
        assert len(jobs) == N == len(set(jobs)) == len(st["last_run"]["submitted"])
    finally:
        logs = [stop_worker(s) for s in schedulers]
    assert sum("manual" not in log and "tick: 40 submitted" in log for log in logs) == 1, logs
    assert all(s.returncode == 0 for s in schedulers)


def test_a_clock_that_went_back_does_not_cost_a_tick(env, home, voice_wav, external_redis):
    """A last tick far ahead of the clock (run while a clock was days fast): the current period
    counts as done and the next tick is the next 2 am, not that far-off time; a clock that jumps
    forward (or a host that slept through ticks) gets one catch-up tick."""
    e = sched_env(env, home)
    docs_in(home / "w", 2)
    add(e, "nightly", home / "w", voice_wav)
    st = state(external_redis, "nightly")
    ahead = time.time() + 3 * 86400
    st["last_tick"] = ahead
    external_redis.set("narrate:schedule:nightly:state", json.dumps(st))
    scheduler = start_scheduler(e)
    try:
        back = wait_until(lambda: state(external_redis, "nightly").get("clock_went_back"), 30, "the rewind")
        assert back["last_tick_was"] == ahead
        now = time.time()
        view = listing(e)["schedules"][0]
        assert view["last_tick"] == cron.previous_tick("0 2 * * *", view["tz"], now)
        assert view["next_run"] == cron.next_tick("0 2 * * *", view["tz"], now)
        assert view["runs"] == 0 and queued(external_redis) == []
        make_due(external_redis, "nightly", days=1.5)  # the clock jumped forward past a 2 am
        wait_runs(external_redis, "nightly", 1)
        time.sleep(10 * INTERVAL_S)
        assert state(external_redis, "nightly")["runs"] == 1 and len(queued(external_redis)) == 2
    finally:
        stop_worker(scheduler)


def test_the_scheduler_moves_jobs_scheduled_for_later(env, home, external_redis):
    """Due jobs of NARRATE_QUEUE and of its priority queues (NAME-high, NAME-low) go into their queue."""
    e = sched_env(env, home)
    due = datetime.now(UTC) + timedelta(seconds=1)
    jobs = {
        name: queue(external_redis, name).enqueue_at(due, "narrate.jobs.task.narrate_job", {"document": name}).id
        for name in ("narrate", "narrate-high", "narrate-low")
    }
    assert all(queued(external_redis, name) == [] for name in jobs)
    scheduler = start_scheduler(e)
    try:
        for name, job_id in jobs.items():
            wait_until(lambda n=name, j=job_id: queued(external_redis, n) == [j], 30, f"the due job in {name}")
    finally:
        stop_worker(scheduler)


def test_the_worker_supervisor_runs_the_scheduler(env, home, voice_wav, external_redis):
    """`narrate worker` runs the scheduler in its supervisor (not in the MLX worker process): a due
    tick is submitted and narrated with nothing else running."""
    e = sched_env(env, home)
    docs_in(home / "w", 3)
    add(e, "nightly", home / "w", voice_wav, "-o", str(home / "out" / "night"))
    worker = start_worker(e)
    try:
        live = wait_until(lambda: listing(e)["schedulers"], 30, "the worker's scheduler")
        assert [pid for _host, pid in live] == [worker.pid]  # the supervisor itself
        make_due(external_redis, "nightly")
        st = wait_runs(external_redis, "nightly", 1)
        for sub in st["last_run"]["submitted"]:
            assert wait_for_job(sub["job"], timeout=60)["status"] == "finished"
        assert sorted(p.name for p in (home / "out" / "night").iterdir()) == [
            "doc0000.mp3",
            "doc0001.mp3",
            "doc0002.mp3",
        ]
    finally:
        log = stop_worker(worker)
    assert worker.returncode == 0, log
    wait_until(lambda: listing(e)["schedulers"] == [], 10, "the scheduler to leave")


def test_a_folder_this_host_cannot_see_leaves_the_tick_for_later(env, home, voice_wav, external_redis):
    """The watched folder gone (not mounted on this host, say): the tick is not used up, the problem
    shows in `schedule list` once, and the tick runs when the folder is back."""
    e = sched_env(env, home)
    docs_in(home / "w", 2)
    add(e, "nightly", home / "w", voice_wav)
    (home / "w").rename(home / "elsewhere")
    make_due(external_redis, "nightly")
    scheduler = start_scheduler(e)
    try:
        problem = wait_until(lambda: listing(e)["schedules"][0]["problem"], 30, "the problem")
        assert "does not exist (on this host)" in problem["reason"]
        time.sleep(5 * INTERVAL_S)
        assert state(external_redis, "nightly")["runs"] == 0 and listing(e)["schedules"][0]["due_now"]
        (home / "elsewhere").rename(home / "w")
        st = wait_runs(external_redis, "nightly", 1)
        assert len(st["last_run"]["submitted"]) == 2 and listing(e)["schedules"][0]["problem"] is None
    finally:
        log = stop_worker(scheduler)
    assert log.count("does not exist (on this host)") == 1, log


def test_the_scheduler_without_a_server_is_a_one_line_error(env, home):
    e = sched_env(env, home, NARRATE_REDIS_URL="redis://127.0.0.1:1/0")
    proc = narrate(e, "scheduler", timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("Error: Redis at redis://127.0.0.1:1/0 did not answer")
    assert len(proc.stderr.strip().splitlines()) == 1
