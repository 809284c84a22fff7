"""No request scans the keyspace: listing narrations, the Books page's reads, a job's files, feeds (made,
listed, a redo taking a narration's place, a deletion, a feed removed) read indexes. A keyspace written
before the indexes gets them in one build (one scan each, under a schema version); from then on the
server's own command counters (INFO commandstats of a server of this test's own: the embedded Valkey) show
no SCAN and no KEYS."""

from __future__ import annotations

from helpers.bulk import enqueue_many, finish_many
from narrate.jobs.api.jobview import JobView
from narrate.jobs.api.listing import list_jobs, list_page
from narrate.jobs.feeds import store
from narrate.jobs.outputs import ownership
from narrate.jobs.server import schema
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings
from narrate.jobs.web import views


def scans(r) -> int:
    stats = r.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in ("scan", "keys"))


def test_requests_read_indexes_and_an_old_keyspace_is_indexed_once(env, home):
    settings = Settings.from_env()
    with Connection(settings) as conn:
        r = conn.redis
        done = finish_many(r, 30)
        enqueue_many(r, 5)
        store.add(r, "news", done[:10])
        store.add(r, "tales", done[5:15])
        # as a keyspace written before the indexes: no indexes, no schema versions
        r.delete(schema.SCHEMA, store.FEEDS, *[ownership.files_key(j) for j in done])
        r.delete(*[f"narrate:job-feeds:{j}" for j in done])
        assert [f.name for f, _ in store.all_feeds(r)] == ["news", "tales"]  # built here, once
        JobView(r, settings).files(list(JobView(r, settings).finished(done[:3]).values()))
        assert schema.built(r.hget(schema.SCHEMA, "feeds"), 1) and schema.built(r.hget(schema.SCHEMA, "job-files"), 1)

        r.config_resetstat()
        list_jobs(r, "narrate", home / "out")
        list_page(r, "narrate", home / "out", limit=10)
        rows = views.listed(r, settings, "completed")
        found = views.finished_narrations(r, settings, [row["id"] for row in rows])
        views.book_facts(r, [job["id"] for job, _ in found])
        assert sum(len(files) for _, files in found) == 0  # (no files on this host: the records are read)
        assert [(f.name, n) for f, n in store.all_feeds(r)] == [("news", 10), ("tales", 10)]
        assert store.replace(r, done[7], "redo-of-7") == ["news", "tales"]  # both feeds found by the index
        assert store.replace(r, "redo-of-7", "redo-again") == ["news", "tales"]
        store.forget(r, done[6])
        store.add(r, "news", ["another"])
        store.remove(r, "tales")
        assert [(f.name, n) for f, n in store.all_feeds(r)] == [("news", 10)]
        assert "redo-again" in store.items(r, "news") and done[6] not in store.items(r, "news")
        assert r.smembers("narrate:job-feeds:redo-again") == {b"news"}  # tales went with its index entries
        assert scans(r) == 0


def test_a_jobs_index_of_paths_is_kept_as_long_as_the_job(external_redis):
    ownership.record_written(external_redis, "books/a.mp3", "job-a", "0" * 64, keep_s=3600)
    assert external_redis.smembers(ownership.files_key("job-a")) == {b"books/a.mp3"}
    assert 3500 < external_redis.ttl(ownership.files_key("job-a")) <= 3600
