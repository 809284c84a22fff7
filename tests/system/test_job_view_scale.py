"""One read model of the jobs (jobs/api/jobview.py) in a bounded number of Redis round trips: with
10,000 finished narrations, the Books page's reads (the finished jobs, their results, their files
through each job's index of paths), `GET /v1/narrations` and `narrate list` take as many round
trips as with 10 (counted, as tests/system/test_list.py counts them); a job's files are found through
its index, without a scan of the keyspace, and a job written before the index is indexed on its
first read."""

from __future__ import annotations

import redis
from helpers.bulk import counted, finish_many
from narrate.jobs.api.jobview import JobView
from narrate.jobs.outputs import ownership
from narrate.jobs.server import schema
from narrate.jobs.settings import Settings
from narrate.jobs.web import views

MANY = 10_000


def reads(settings: Settings):
    """What the Books page and the list read of every finished narration."""

    def read(r: redis.Redis) -> tuple[int, int]:
        rows = views.listed(r, settings, "completed")
        found = views.finished_narrations(r, settings, [row["id"] for row in rows])
        views.book_facts(r, [job["id"] for job, _ in found])
        return len(rows), len(found)

    return read


def test_ten_thousand_finished_narrations_take_as_many_round_trips_as_ten(home, external_redis):
    settings = Settings(home=home, output_dir=home / "out", queue="narrate")
    finish_many(external_redis, 10)
    ten, got = counted(reads(settings))
    assert got == (10, 10)
    finish_many(external_redis, MANY - 10, offset=10)
    many, got = counted(reads(settings))
    assert got == (MANY, MANY)
    assert many == ten <= 8, (ten, many)
    listed, rows = counted(lambda r: JobView(r, settings).list_all())
    assert listed == 3 and len(rows) == MANY  # `narrate list` and GET /v1/narrations


def test_a_jobs_files_come_from_its_index_and_old_jobs_are_indexed_once(home, external_redis):
    """A keyspace written before the index (no index of paths, no schema version): the first read builds
    every job's index by one scan, under the version; from then on no read scans, a job that wrote nothing
    included (it was scanned on every read before)."""
    settings = Settings(home=home, output_dir=home / "out", queue="narrate")
    (home / "out" / "books").mkdir(parents=True)
    job_id, silent = finish_many(external_redis, 2)
    (home / "out" / "books" / f"{job_id}.mp3").write_bytes(b"audio")
    view = JobView(external_redis, settings)
    done = view.finished([job_id, silent])
    assert [f.name for f in view.files([done[job_id]])[job_id]] == [f"{job_id}.mp3"]
    external_redis.delete(ownership.files_key(job_id), ownership.files_key(silent), schema.SCHEMA)  # an old keyspace
    external_redis.delete(ownership.key(f"books/{silent}.mp3"))  # a job that wrote nothing
    trips, files = counted(lambda r: JobView(r, settings).files([done[job_id]]))
    assert [f.name for f in files[job_id]] == [f"{job_id}.mp3"] and trips > 2  # indexed once
    assert schema.built(external_redis.hget(schema.SCHEMA, "job-files"), 1)
    for jobs in ([done[job_id]], [done[silent]], list(done.values())):
        trips, files = counted(lambda r, jobs=jobs: JobView(r, settings).files(jobs))
        assert trips <= 2, jobs  # then from the index: the schema's version and the indexes, then any records
    assert [f.name for f in files[job_id]] == [f"{job_id}.mp3"] and files[silent] == []
