"""Lists a page at a time (jobs/api/listing.py list_page): the newest `limit` jobs after a given one,
whether more follow, and only the page's jobs read (a page costs the same round trips with 10,000
jobs as with 100); `GET /v1/narrations?limit=&after=` (has_more, first_id, last_id), the Queue
page (everything that runs, waits or is scheduled, then the ended ones 50 at a time with a link to
older ones) and the Books page (48 at a time) of a real `narrate serve`."""

from __future__ import annotations

import re

import requests
from helpers.bulk import counted, enqueue_many, finish_many
from helpers.servers import external_redis_url, free_port
from helpers.web import remove_home, serve_env, start_serve, stop, wait_serving
from narrate.jobs.api.listing import list_jobs, list_page


def test_pages_follow_one_another_newest_first_and_cost_the_same_at_any_size(home, external_redis):
    finish_many(external_redis, 120)
    enqueue_many(external_redis, 5)
    every = [row["id"] for row in list_jobs(external_redis, "narrate", home / "out")]
    assert len(every) == 125
    seen, after, pages = [], None, 0
    while True:
        rows, more = list_page(external_redis, "narrate", home / "out", limit=50, after=after)
        seen += [row["id"] for row in rows]
        pages += 1
        if not more:
            break
        after = rows[-1]["id"]
    assert seen == every and pages == 3  # the same order, no job twice or lost
    finished = list_page(external_redis, "narrate", home / "out", ("finished",), limit=10)[0]
    assert len(finished) == 10 and {row["status"] for row in finished} == {"finished"}
    assert list_page(external_redis, "narrate", home / "out", limit=10, after="no-such-job") == ([], False)
    small = counted(lambda r: list_page(r, "narrate", home / "out", limit=20))[0]
    finish_many(external_redis, 3000, offset=120)
    assert counted(lambda r: list_page(r, "narrate", home / "out", limit=20))[0] == small <= 5


def test_the_api_and_the_pages_show_a_page_at_a_time(checkpoint, external_redis):
    finish_many(external_redis, 130)
    enqueue_many(external_redis, 3)
    env, home = serve_env(checkpoint, NARRATE_REDIS_URL=external_redis_url())
    port = free_port()
    proc = start_serve(env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(proc, url)
        first = requests.get(f"{url}/v1/narrations", params={"limit": 100}, timeout=60).json()
        assert len(first["data"]) == 100 and first["has_more"] and first["last_id"] == first["data"][-1]["id"]
        rest = requests.get(f"{url}/v1/narrations", params={"limit": 100, "after": first["last_id"]}, timeout=60).json()
        assert len(rest["data"]) == 33 and not rest["has_more"]
        assert not {n["id"] for n in first["data"]} & {n["id"] for n in rest["data"]}
        bad = requests.get(f"{url}/v1/narrations", params={"limit": 0}, timeout=60)
        assert bad.status_code == 422 and bad.json()["error"]["param"] == "limit"

        page = requests.get(f"{url}/queue", timeout=60).text
        assert len(re.findall(r'<article class="card job"', page)) == 3 + 50  # all that waits, 50 ended
        older = re.search(r'href="/queue\?after=([^"]+)">Older narrations', page)
        assert older
        page2 = requests.get(f"{url}/queue", params={"after": older.group(1)}, timeout=60).text
        assert len(re.findall(r'<article class="card job"', page2)) == 3 + 50
        books = requests.get(f"{url}/books", timeout=60).text
        assert len(re.findall(r'<article class="card book"', books)) == 48 and "Older books" in books
    finally:
        stop(proc)
        remove_home(home)
