"""Taking over a part whose host stopped beating is atomic. Every host's scheduler loop looks for such
parts, so several can find one at once, and a live worker may start it again between a look and the
requeue: the part is requeued once, and never while a live worker runs it (two hosts would run it)."""

from __future__ import annotations

import threading
from datetime import timedelta

import redis
from helpers.servers import external_redis_url
from narrate.jobs.fanout import takeover
from narrate.jobs.queue import lifecycle
from narrate.jobs.task import progress
from rq import Queue, SimpleWorker
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from rq.utils import now, utcformat

QUEUE = "takeover-test"


def _queue(r: redis.Redis) -> Queue:
    return Queue(QUEUE, connection=r, serializer=JSONSerializer)


def start(r: redis.Redis, job: Job, name: str) -> SimpleWorker:
    """What a worker does when it takes a job: off the queue, registered as started by it."""
    w = SimpleWorker([_queue(r)], connection=r, serializer=JSONSerializer, name=name)
    w.register_birth()
    _queue(r).remove(job.id)
    w.prepare_execution(job)
    w.prepare_job_execution(job)
    return w


def die(r: redis.Redis, w: SimpleWorker) -> None:
    """Its host was killed: no heartbeat for a minute."""
    r.hset(w.key, "last_heartbeat", utcformat(now() - timedelta(seconds=60)))


def abandoned_part(r: redis.Redis) -> Job:
    job = _queue(r).enqueue("narrate.jobs.parts.part_job", meta={"book": "b", "heartbeat_s": 1, "grace_s": 0})
    die(r, start(r, job, "dead-host"))
    return Job.fetch(job.id, connection=r, serializer=JSONSerializer)


def test_many_hosts_looking_at_once_requeue_a_dead_part_once(external_redis):
    job = abandoned_part(external_redis)
    clients = [redis.Redis.from_url(external_redis_url()) for _ in range(8)]
    together = threading.Barrier(len(clients))
    taken: list[list[str]] = []

    def scan(r: redis.Redis) -> None:
        together.wait()
        taken.append(takeover.take_over_parts(r, [QUEUE]))

    threads = [threading.Thread(target=scan, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken, key=len) == [[]] * 7 + [[job.id]]
    assert _queue(external_redis).job_ids == [job.id]  # once: one host runs it
    assert Job.fetch(job.id, connection=external_redis, serializer=JSONSerializer).get_status() == JobStatus.QUEUED
    for c in clients:
        c.close()


def test_a_part_started_again_between_the_look_and_the_requeue_is_left_to_its_worker(external_redis, monkeypatch):
    r = external_redis
    job = abandoned_part(r)
    live: list[SimpleWorker] = []

    def abandoned_meanwhile_taken(r_: redis.Redis, seen: Job):
        got = lifecycle.abandoned(r_, seen)
        # meanwhile another host's scan requeued it and a live worker started it
        other = Job.fetch(seen.id, connection=r, serializer=JSONSerializer)
        assert lifecycle.take_back(r, other, "crash")
        live.append(start(r, other, "live-host"))
        return got

    monkeypatch.setattr(takeover, "abandoned", abandoned_meanwhile_taken)
    assert takeover.take_over_parts(r, [QUEUE]) == []  # judged gone by the stale look, but left alone
    now_job = Job.fetch(job.id, connection=r, serializer=JSONSerializer)
    assert now_job.get_status() == JobStatus.STARTED and now_job.worker_name == live[0].name
    assert _queue(r).job_ids == []
    # its worker dies too: now the part is taken over
    die(r, live[0])
    monkeypatch.setattr(takeover, "abandoned", lifecycle.abandoned)
    assert takeover.take_over_parts(r, [QUEUE]) == [job.id]
    assert _queue(r).job_ids == [job.id]


def test_a_worker_back_from_sleep_learns_its_job_is_another_workers(external_redis):
    """Between batches a running job asks whether it is still its worker's (`cancel_reason`)."""
    r = external_redis
    job = abandoned_part(r)
    assert lifecycle.cancel_reason(r, job.id, "dead-host") is None  # judged gone, but nobody took it: still its own
    assert lifecycle.cancel_reason(r, job.id) is None  # asked without a worker name: cancel and delete only
    assert lifecycle.take_back(r, job, "crash")
    assert lifecycle.cancel_reason(r, job.id, "dead-host") == "taken"  # requeued
    start(r, Job.fetch(job.id, connection=r, serializer=JSONSerializer), "live-host")
    assert lifecycle.cancel_reason(r, job.id, "dead-host") == "taken"  # started by another worker
    assert lifecycle.cancel_reason(r, job.id, "live-host") is None
    r.hset(job.key, "status", JobStatus.FAILED.value)  # rq's registry cleanup: failed, nobody runs it
    assert lifecycle.cancel_reason(r, job.id, "dead-host") is None
    r.hset(job.key, lifecycle.CANCEL_FIELD, "narrate cancel")
    assert lifecycle.cancel_reason(r, job.id, "live-host") == "canceled"


def test_a_worker_back_from_sleep_writes_no_progress_into_a_job_another_worker_has(external_redis):
    r = external_redis
    asleep = abandoned_part(r)  # the sleeping worker's own copy of the job
    assert lifecycle.take_back(r, Job.fetch(asleep.id, connection=r, serializer=JSONSerializer), "crash")
    start(r, Job.fetch(asleep.id, connection=r, serializer=JSONSerializer), "live-host")
    live = Job.fetch(asleep.id, connection=r, serializer=JSONSerializer)
    live.meta.update(host="live", progress={"done": 5})
    progress.save_meta(live)
    asleep.meta.update(host="asleep", progress={"done": 2})
    progress.save_meta(asleep)  # woken: its batch in flight ends and saves its progress
    assert Job.fetch(asleep.id, connection=r, serializer=JSONSerializer).get_meta() == live.meta
    r.hset(asleep.key, "status", JobStatus.FINISHED.value)  # the live worker finished it
    progress.save_meta(asleep)
    assert Job.fetch(asleep.id, connection=r, serializer=JSONSerializer).get_meta() == live.meta
    r.hset(asleep.key, "status", JobStatus.FAILED.value)  # rq's registry cleanup failed it: nobody else runs it
    progress.save_meta(asleep)  # so the worker back from sleep goes on, and its progress shows
    assert Job.fetch(asleep.id, connection=r, serializer=JSONSerializer).get_meta() == asleep.meta
    r.delete(asleep.key)  # deleted (rq-dashboard's Delete): a late save does not bring a record back
    progress.save_meta(asleep)
    assert not r.exists(asleep.key)
