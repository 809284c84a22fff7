"""A clip job taken along a book (jobs.queue.riding) is never lost: taken at most once, off its
queue onto the host's claim list; a worker killed while it rides leaves it for the host's next
worker to put back at the front of its queue; done, it is finished as rq's worker would finish it;
given back, it waits at the front of its queue again."""

from __future__ import annotations

from narrate.jobs.api import voice_actions as voices_api
from narrate.jobs.queue import claims, riding
from narrate.jobs.queue.cancel import cancel
from narrate.jobs.server.records import find, queue
from narrate.jobs.settings import Settings
from narrate.jobs.voices.choice import choose
from rq.job import JobStatus


def clip(r, model, name: str):
    settings = Settings.from_env()
    chosen = choose(r, "ryan", str(model), "ffmpeg", None, settings.model, files=False)
    return voices_api.preview(settings, r, chosen, f"Hello from {name}.", model=str(model))


def test_a_rider_is_taken_once_recovered_after_a_crash_finished_or_given_back(
    external_redis, env, custom_voice_checkpoint
):
    r = external_redis
    one, two = clip(r, custom_voice_checkpoint, "one"), clip(r, custom_voice_checkpoint, "two")
    high = queue(r, one.origin)
    assert riding.take(r, high.key, "host-a", one.id)
    assert not riding.take(r, high.key, "host-b", one.id)  # once only: another host finds it gone
    assert r.lrange(high.key, 0, -1) == [two.id.encode()]
    assert r.lrange(claims.claim_key("host-a"), 0, -1) == [one.id.encode()]
    assert find(r, one.id).get_status() == JobStatus.QUEUED  # it waits, claimed, while it rides

    assert claims.recover_claims(r, "host-a") == [one.id]  # the worker died with it aboard
    assert r.lrange(high.key, 0, -1) == [one.id.encode(), two.id.encode()]  # back at the front

    assert riding.take(r, high.key, "host-a", one.id)
    job = find(r, one.id)
    riding.finish(r, job, {"clips": [{"number": 1}]}, "worker-a", "host-a")
    done = find(r, one.id)
    assert done.get_status() == JobStatus.FINISHED and done.return_value() == {"clips": [{"number": 1}]}
    assert one.id in done.finished_job_registry.get_job_ids()
    assert r.llen(claims.claim_key("host-a")) == 0

    assert riding.take(r, high.key, "host-a", two.id)
    riding.give_back(r, find(r, two.id), "host-a")
    assert r.lrange(high.key, 0, -1) == [two.id.encode()] and r.llen(claims.claim_key("host-a")) == 0

    assert riding.take(r, high.key, "host-a", two.id)  # canceled while it rides: it stays canceled
    cancel(r, two.id, "the client went away")
    assert not riding.finish(r, find(r, two.id), {"clips": []}, "worker-a", "host-a")
    assert find(r, two.id).get_status() == JobStatus.CANCELED and r.llen(claims.claim_key("host-a")) == 0
