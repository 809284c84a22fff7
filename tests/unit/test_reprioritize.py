"""A waiting job moved to another priority (jobs/queue/reprioritize.py `set_priority`), on the
external Redis with real rq jobs: a queued job to the end of the other queue's list, a scheduled
one to the other queue's scheduled registry at the same due time; a job no longer waiting, an
unknown id and a bad priority refused in one line; a worker taking the job meanwhile never leaves
it in two queues or in none."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from helpers.servers import external_redis_url
from narrate.jobs.api.listing import list_jobs
from narrate.jobs.api.submit import JOB_FUNCTION
from narrate.jobs.errors import BadInput, JobNotFound
from narrate.jobs.queue.queues import queue_for
from narrate.jobs.queue.reprioritize import QUEUES_KEY, set_priority
from narrate.jobs.server.records import queue
from rq import Queue
from rq.job import Job
from rq.registry import ScheduledJobRegistry

BASE = "narrate"


def enqueue(r: redis.Redis, ids: list[str], priority: str = "normal") -> list[str]:
    """Real rq jobs as narrate makes them (JSON serializer, narrate meta), in the queue of `priority`."""
    q = queue(r, queue_for(BASE, priority))
    data = [
        Queue.prepare_data(
            JOB_FUNCTION,
            ({"document": "0" * 64, "voice": "0" * 64, "output": f"out/{job_id}.mp3"},),
            job_id=job_id,
            description=f"narrate {job_id}",
            meta={
                "progress": {"done": 0, "total": 10, "audio_seconds": 0.0},
                "document": f"{job_id}.txt",
                "output": f"out/{job_id}.mp3",
            },
        )
        for job_id in ids
    ]
    with r.pipeline() as p:
        q.enqueue_many(data, pipeline=p)
        p.execute()
    return ids


def schedule(r: redis.Redis, job_id: str, due: datetime, priority: str = "normal") -> None:
    """A job scheduled as `narrate submit --at` makes it: rq's enqueue_at on a narrate queue."""
    queue(r, queue_for(BASE, priority)).enqueue_at(
        due,
        JOB_FUNCTION,
        {"document": "0" * 64, "voice": "0" * 64, "output": f"out/{job_id}.mp3"},
        job_id=job_id,
        meta={"document": f"{job_id}.txt", "output": f"out/{job_id}.mp3"},
    )


def listed(r: redis.Redis, priority: str) -> list[str]:
    return [v.decode() for v in r.lrange(queue(r, queue_for(BASE, priority)).key, 0, -1)]


def scheduled(r: redis.Redis, priority: str) -> dict[str, float]:
    key = ScheduledJobRegistry(queue=queue(r, queue_for(BASE, priority))).key
    return {k.decode(): score for k, score in r.zrange(key, 0, -1, withscores=True)}


def origin(r: redis.Redis, job_id: str) -> str:
    return r.hget(Job.key_for(job_id), "origin").decode()


def rows(r: redis.Redis, tmp_path: Path) -> dict[str, dict]:
    return {row["id"]: row for row in list_jobs(r, BASE, tmp_path)}


def test_a_queued_job_moves_to_the_end_of_the_other_priority(external_redis, tmp_path):
    r = external_redis
    enqueue(r, ["h-1", "h-2"], "high")
    enqueue(r, ["n-1", "n-2", "n-3"])
    said = set_priority(r, BASE, "n-2", "high")
    assert said == "n-2 moved to high priority"
    assert listed(r, "high") == ["h-1", "h-2", "n-2"]  # behind the jobs already there
    assert listed(r, "normal") == ["n-1", "n-3"] and listed(r, "low") == []
    assert origin(r, "n-2") == "narrate-high"
    assert r.hget(Job.key_for("n-2"), "status") == b"queued"
    assert r.sismember(QUEUES_KEY, "rq:queue:narrate-high")
    shown = rows(r, tmp_path)
    assert shown["n-2"]["priority"] == "high" and shown["n-2"]["status"] == "queued"
    assert shown["n-1"]["priority"] == "normal" and shown["h-1"]["priority"] == "high"
    # and on to low: the end of the low list, out of the high one
    assert set_priority(r, BASE, "n-2", "low") == "n-2 moved to low priority"
    assert listed(r, "high") == ["h-1", "h-2"] and listed(r, "low") == ["n-2"] and origin(r, "n-2") == "narrate-low"
    assert rows(r, tmp_path)["n-2"]["priority"] == "low"


def test_the_same_priority_is_already_so_and_nothing_moves(external_redis):
    r = external_redis
    enqueue(r, ["n-1", "n-2"])
    enqueue(r, ["h-1"], "high")
    assert set_priority(r, BASE, "n-1", "normal") == "n-1 is already normal priority"
    assert set_priority(r, BASE, "h-1", "high") == "h-1 is already high priority"
    assert listed(r, "normal") == ["n-1", "n-2"] and listed(r, "high") == ["h-1"]
    assert origin(r, "n-1") == "narrate" and origin(r, "h-1") == "narrate-high"


def test_a_scheduled_job_moves_to_the_other_scheduled_registry_at_the_same_time(external_redis, tmp_path):
    r = external_redis
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
    schedule(r, "s-1", due)
    assert r.hget(Job.key_for("s-1"), "status") == b"scheduled"
    assert scheduled(r, "normal") == {"s-1": due.timestamp()}
    assert set_priority(r, BASE, "s-1", "low") == "s-1 moved to low priority"
    assert scheduled(r, "normal") == {} and scheduled(r, "low") == {"s-1": due.timestamp()}
    assert scheduled(r, "high") == {}
    assert all(listed(r, p) == [] for p in ("high", "normal", "low"))  # still scheduled, not queued
    assert origin(r, "s-1") == "narrate-low" and r.hget(Job.key_for("s-1"), "status") == b"scheduled"
    row = rows(r, tmp_path)["s-1"]
    assert row["status"] == "scheduled" and row["priority"] == "low"
    assert row["scheduled_for"] == due.isoformat()
    assert set_priority(r, BASE, "s-1", "high") == "s-1 moved to high priority"
    assert scheduled(r, "low") == {} and scheduled(r, "high") == {"s-1": due.timestamp()}


@pytest.mark.parametrize("status", ["started", "finished", "failed", "canceled"])
def test_a_job_no_longer_waiting_is_refused(external_redis, status):
    r = external_redis
    enqueue(r, ["n-1"])
    r.lrem(queue(r, BASE).key, 1, "n-1")  # a worker took it (or it ended)
    r.hset(Job.key_for("n-1"), "status", status)
    with pytest.raises(BadInput, match=f"job n-1 is {status}: only a queued or scheduled job changes priority"):
        set_priority(r, BASE, "n-1", "high")
    assert listed(r, "high") == [] and origin(r, "n-1") == "narrate"


def test_an_unknown_job_and_a_bad_priority_are_refused(external_redis):
    r = external_redis
    with pytest.raises(JobNotFound, match=r"no job 'nope' \(wrong id, or it expired\)"):
        set_priority(r, BASE, "nope", "high")
    enqueue(r, ["n-1"])
    for bad in ("urgent", "HIGH", ""):
        with pytest.raises(BadInput, match=f"unknown priority {bad!r}: use one of high, normal, low"):
            set_priority(r, BASE, "n-1", bad)
    assert listed(r, "normal") == ["n-1"] and listed(r, "high") == [] and origin(r, "n-1") == "narrate"
    r.hdel(Job.key_for("n-1"), "origin")  # a hash without its queue: not a job set_priority can move
    with pytest.raises(JobNotFound, match="no job 'n-1'"):
        set_priority(r, BASE, "n-1", "high")


def _after(monkeypatch, method: str, then) -> list[int]:
    """Run `then()` once, right after the first call of the pipeline's `method` (inside the WATCH)."""
    calls = []
    original = getattr(redis.client.Pipeline, method)

    def wrapped(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            then()
        return result

    monkeypatch.setattr(redis.client.Pipeline, method, wrapped)
    return calls


def test_a_worker_taking_the_job_before_the_list_is_read_leaves_it_where_it_was(external_redis, monkeypatch):
    """The worker pops the job after the job's hash is read: the move sees it gone from its list."""
    r = external_redis
    enqueue(r, ["n-1", "n-2"])
    worker = redis.Redis.from_url(external_redis_url())
    try:
        calls = _after(monkeypatch, "hmget", lambda: worker.lrem("rq:queue:narrate", 1, "n-1"))
        with pytest.raises(BadInput, match=r"job n-1 is being taken by a worker \(it runs at normal\)"):
            set_priority(r, BASE, "n-1", "high")
    finally:
        worker.close()
    assert calls == [1]
    assert listed(r, "high") == [] and listed(r, "normal") == ["n-2"]  # in no queue: the worker has it
    assert origin(r, "n-1") == "narrate"


def test_a_worker_taking_the_job_between_watch_and_exec_makes_the_move_fail_cleanly(external_redis, monkeypatch):
    """The worker pops the job (and marks it started) after the move saw it in its list, before its
    EXEC: the watched list changed, so the transaction is dropped and the retry sees the job taken."""
    r = external_redis
    enqueue(r, ["n-1", "n-2"])
    worker = redis.Redis.from_url(external_redis_url())

    def take() -> None:
        with worker.pipeline() as p:
            p.lrem("rq:queue:narrate", 1, "n-1")
            p.hset(Job.key_for("n-1"), "status", "started")
            p.execute()

    try:
        calls = _after(monkeypatch, "lpos", take)
        with pytest.raises(BadInput, match="job n-1 is started"):
            set_priority(r, BASE, "n-1", "high")
    finally:
        worker.close()
    assert calls == [1]  # the retry stopped at the job's status, before the list
    assert listed(r, "high") == [] and listed(r, "normal") == ["n-2"]
    assert origin(r, "n-1") == "narrate"  # it runs at the priority it had


def test_a_popped_job_still_marked_queued_is_not_moved_on_retry(external_redis, monkeypatch):
    """As above, but the worker has not yet marked the job started when the move retries."""
    r = external_redis
    enqueue(r, ["n-1"])
    worker = redis.Redis.from_url(external_redis_url())
    try:
        calls = _after(monkeypatch, "lpos", lambda: worker.lrem("rq:queue:narrate", 1, "n-1"))
        with pytest.raises(BadInput, match="job n-1 is being taken by a worker"):
            set_priority(r, BASE, "n-1", "high")
    finally:
        worker.close()
    assert calls == [1, 1]  # one retry, which found the job gone from its list
    assert listed(r, "high") == [] and listed(r, "normal") == [] and origin(r, "n-1") == "narrate"


def test_a_scheduled_job_enqueued_meanwhile_is_not_put_in_two_places(external_redis, monkeypatch):
    """The scheduler moves the due job to its queue's list after the move read its due time."""
    r = external_redis
    due = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=5)
    schedule(r, "s-1", due)
    scheduler = redis.Redis.from_url(external_redis_url())

    def enqueue_due() -> None:
        with scheduler.pipeline() as p:
            p.zrem("rq:scheduled:narrate", "s-1")
            p.rpush("rq:queue:narrate", "s-1")
            p.hset(Job.key_for("s-1"), "status", "queued")
            p.execute()

    try:
        _after(monkeypatch, "zscore", enqueue_due)
        said = set_priority(r, BASE, "s-1", "high")  # the retry finds it queued: moved from the list
    finally:
        scheduler.close()
    assert said == "s-1 moved to high priority"
    assert listed(r, "high") == ["s-1"] and listed(r, "normal") == []
    assert scheduled(r, "normal") == {} and scheduled(r, "high") == {}
    assert origin(r, "s-1") == "narrate-high"


def test_a_job_of_another_base_queue_is_never_moved_into_this_ones(external_redis):
    """Two narrate queues on one server (NARRATE_QUEUE narrate and narrate-x): a job of narrate-x
    is not narrate's to move, whatever its name starts with."""
    r = external_redis
    other = queue(r, "narrate-x")
    other.enqueue_many([Queue.prepare_data(JOB_FUNCTION, ({"document": "0" * 64},), job_id="x-1")])
    for priority in ("high", "normal"):
        with pytest.raises(BadInput, match="is in queue narrate-x, not one of narrate's"):
            set_priority(r, BASE, "x-1", priority)
    assert [v.decode() for v in r.lrange(other.key, 0, -1)] == ["x-1"] and origin(r, "x-1") == "narrate-x"
    assert listed(r, "high") == [] and listed(r, "normal") == []
