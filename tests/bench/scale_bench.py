"""The queue at scale: 10,000 finished narrations and 200 queued in Redis, then how long each view
of them takes on this machine, as a person meets it: `narrate list --json` (the whole command),
`GET /v1/narrations`, the Books and Queue pages of `narrate serve`, and rq-dashboard's queue and job
lists (`narrate dashboard`); and the worker's overhead per job (the fake engine, one-sentence documents,
`--priority high`) in an empty Redis and beside those 10,200. Side by side in one process, the Books
page's reads the way it read them before the job read model (each finished narration on its own: its
status, result and files, with a scan of the keyspace for its files) and the way it reads them now
(jobs/api/jobview.py: a bounded number of round trips). Prints the figures and writes JSON (with the date).

    .venv/bin/python tests/bench/scale_bench.py [--finished 10000] [--queued 200] [--json FILE]

It claims an empty DB of the Redis on 127.0.0.1:6379 (as the tests do: tests/helpers/servers.py)
and flushes it at the end."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import redis
import requests

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # for helpers/, as tests/conftest.py has it for the tests

from helpers.audio import write_voice  # noqa: E402
from helpers.bulk import enqueue_many, finish_many  # noqa: E402
from helpers.dashboard import dashboard  # noqa: E402
from helpers.procs import NARRATE, start_worker, stop_worker, wait_until  # noqa: E402
from helpers.servers import external_redis_url, free_port  # noqa: E402
from helpers.web import start_serve, stop, wait_serving  # noqa: E402


def timed(fn, repeat: int = 3) -> float:
    """The median wall time of `fn`, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times), 3)


def get(url: str) -> None:
    answer = requests.get(url, timeout=300)
    answer.raise_for_status()


def books_before(r: redis.Redis, settings) -> int:
    """The Books page's reads as they were: every finished narration read on its own, its files found
    by a scan of the output records (jobs/outputs/recorded.py before its index)."""
    from narrate.jobs.outputs import ownership
    from narrate.jobs.web import views

    n = 0
    for row in views.listed(r, settings, "completed"):
        st = views.job_status(r, row["id"])
        rel = (st.get("result") or {}).get("output_relative")
        r.delete(ownership.files_key(row["id"]))  # no index: the scan
        scanned(r, row["id"], rel)
        n += 1
    return n


def scanned(r: redis.Redis, job_id: str, output_relative: str) -> list[str]:
    """The paths under the output's stem whose record names `job_id`, by a scan of the keyspace: how the
    files of a job were found before each job had an index of its paths (jobs/outputs/recorded.py)."""
    from pathlib import PurePosixPath

    from narrate.jobs.outputs import ownership

    stem = PurePosixPath(output_relative).with_suffix("").as_posix()
    glob = ownership.key(stem).translate(str.maketrans({c: f"\\{c}" for c in "*?[]\\"}))
    found = []
    for raw in r.scan_iter(match=glob + "*", count=1000):
        who = r.hget(raw, "job")
        if who is not None and who.decode() == job_id:
            found.append(raw.decode().removeprefix(ownership.key("")))
    return sorted(found)


def books_now(r: redis.Redis, settings) -> int:
    from narrate.jobs.web import views

    rows = views.listed(r, settings, "completed")
    found = views.finished_narrations(r, settings, [row["id"] for row in rows])
    views.book_facts(r, [job["id"] for job, _ in found])
    return len(found)


def per_job(env: dict, r: redis.Redis, home: Path, n: int, tag: str) -> dict:
    """A worker's time per job: N one-sentence documents submitted at high priority (ahead of any queued
    ones) and narrated by the fake engine (no synthesis time), from the first job's start to the last
    one's end, divided by N; and the median gap between one job's end and the next one's start."""
    from rq.job import Job
    from rq.serializers import JSONSerializer

    docs = []
    for i in range(n):
        doc = home / f"{tag}-{i}.txt"
        doc.write_text(f"Document {tag} number {i} has one sentence.\n")
        docs.append(str(doc))
    e = dict(env, NARRATE_ENGINE="fake", NARRATE_FAKE_DELAY_MS="0")
    args = [
        *NARRATE,
        "submit",
        *docs,
        "--voice",
        str(home / "voice.wav"),
        "--priority",
        "high",
        "--json",
        "-o",
        str(home / "out" / tag),
    ]
    ran = subprocess.run(args, env=e, capture_output=True, text=True, check=True)
    ids = [json.loads(line)["id"] for line in ran.stdout.splitlines()]
    worker = start_worker(e)
    try:
        wait_until(
            lambda: all(j.get_status() == "finished" for j in Job.fetch_many(ids, r, JSONSerializer)),
            timeout=600,
            what=f"{n} jobs finished",
            poll=0.2,
        )
    finally:
        stop_worker(worker)
    jobs = sorted(Job.fetch_many(ids, r, JSONSerializer), key=lambda j: j.started_at)
    span = (jobs[-1].ended_at - jobs[0].started_at).total_seconds()
    gaps = [(b.started_at - a.ended_at).total_seconds() for a, b in zip(jobs, jobs[1:], strict=False)]
    runs = [(j.ended_at - j.started_at).total_seconds() for j in jobs]
    return {
        "jobs": n,
        "per_job_s": round(span / n, 3),
        "median_job_s": round(statistics.median(runs), 3),
        "median_gap_s": round(statistics.median(gaps), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finished", type=int, default=10_000)
    parser.add_argument("--queued", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=20, help="jobs the worker's overhead is measured on")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from narrate.jobs.settings import Settings

    url = external_redis_url()
    r = redis.Redis.from_url(url)
    home = Path(tempfile.mkdtemp(prefix="nsb-", dir="/tmp"))
    (home / "out").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NARRATE_")}
    env.update(
        NARRATE_REDIS_URL=url,
        NARRATE_HOME=str(home),
        NARRATE_OUTPUT_DIR=str(home / "out"),
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    figures: dict[str, object] = {}
    write_voice(home / "voice.wav")
    try:
        figures["worker_empty"] = per_job(env, r, home, args.jobs, "empty")
        r.flushdb()
        t0 = time.perf_counter()
        for start in range(0, args.finished, 1000):
            finish_many(r, min(1000, args.finished - start), offset=start)
        enqueue_many(r, args.queued)
        figures["build_s"] = round(time.perf_counter() - t0, 1)
        settings = Settings(home=home, output_dir=home / "out", queue="narrate")

        figures["startup_s"] = timed(
            lambda: subprocess.run([*NARRATE, "--version"], env=env, check=True, capture_output=True)
        )
        figures["narrate_list_s"] = timed(
            lambda: subprocess.run([*NARRATE, "list", "--json"], env=env, check=True, capture_output=True)
        )

        now = timed(lambda: books_now(r, settings))
        before = timed(lambda: books_before(r, settings), repeat=1)
        books_now(r, settings)  # the index again, after the scans
        figures["books_reads"] = {"before_s": before, "now_s": now, "ratio": round(before / now, 1) if now else None}

        port = free_port()
        proc = start_serve(env, port)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_serving(proc, base)
            for name, path in (
                ("v1_narrations_s", "/v1/narrations"),
                ("books_page_s", "/books"),
                ("queue_page_s", "/queue"),
            ):
                figures[name] = timed(lambda p=path: get(base + p))
        finally:
            stop(proc)

        with dashboard(env) as dport:
            dbase = f"http://127.0.0.1:{dport}"
            figures["dashboard_queues_s"] = timed(lambda: get(f"{dbase}/0/data/queues.json"))
            finished = f"{dbase}/0/data/jobs/narrate/finished/8/asc/1.json"
            figures["dashboard_finished_page_s"] = timed(lambda: get(finished))
            figures["dashboard_progress_page_s"] = timed(lambda: get(f"{dbase}/narrate"))

        figures["worker_at_scale"] = per_job(env, r, home, args.jobs, "scale")
        empty, scale = figures["worker_empty"], figures["worker_at_scale"]
        figures["worker_overhead_ratio"] = round(scale["per_job_s"] / empty["per_job_s"], 2)
    finally:
        r.flushdb()
        r.close()
        subprocess.run(["rm", "-rf", str(home)], check=False)
    report = {
        "date": datetime.now(UTC).date().isoformat(),
        "finished": args.finished,
        "queued": args.queued,
        "machine": f"{os.cpu_count()} cores",
        **figures,
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
