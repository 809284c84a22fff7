"""A podcast feed of a real `narrate serve` (API key, worker, embedded Valkey, tiny checkpoint) whose
books' names hold what XML 1.0 refuses (U+FFFF, U+FFFE, controls) and bidi overrides: the feed parses
with a strict XML parser and feedparser shows every episode, titled by its book's title (an HTML
page's <title>; else one made from the file name: no extension, no hash suffix); its chapters are
clean. An unknown feed, a bad name, a missing, wrong or revoked token get the very same 404 (status,
body, headers) on every feed route; the server's log never shows the token."""

from __future__ import annotations

import json

import feedparser
import pytest
import requests
from helpers.procs import narrate, wait_until
from helpers.web import output, serve
from lxml import etree

KEY = "a-long-random-key-for-the-feeds-4567"
AUTH = {"Authorization": f"Bearer {KEY}"}
HTML = (
    "<html><head><title>The Harbor\uffff at \u202eDawn\ufffe</title></head><body><h1>Chapter\uffff One</h1>"
    "<p>Ships came in at dawn.</p></body></html>"
)


@pytest.fixture(scope="module")
def served(checkpoint):
    s = serve(checkpoint, NARRATE_API_KEY=KEY).with_worker()
    s.env["NARRATE_PUBLIC_URL"] = s.url
    yield s
    logs = s.close()
    assert "Traceback" not in logs, logs[-4000:]


def post_file(served, voice_wav, name: str, data: bytes, fmt: str) -> str:
    with open(voice_wav, "rb") as f:
        made = served.post(
            "/v1/narrations",
            data={"feed": "news", "format": fmt},
            files={"file": (name, data), "voice_sample": f},
            headers=AUTH,
        )
    assert made.status_code == 202, made.text
    return made.json()["id"]


def feed_url(served) -> str:
    shown = narrate(served.env, "feed", "show", "news", "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["url"]


def answer(response: requests.Response) -> tuple[int, bytes, tuple]:
    return (
        response.status_code,
        response.content,
        tuple(sorted((k.lower(), v) for k, v in response.headers.items() if k.lower() != "date")),
    )


def test_odd_names_make_a_strict_feed_titled_by_books_and_unknown_feeds_look_alike(served, voice_wav):
    ids = {
        post_file(served, voice_wav, "art\uffff2\u202e.txt", b"An article about rain. It fell all day.", "mp3"): "art2",
        post_file(served, voice_wav, "page.html", HTML.encode(), "m4b"): "The Harbor at Dawn",
        post_file(served, voice_wav, "harbor-11d97576cb.txt", b"A report on the harbor.", "wav"): "harbor",
    }
    for job_id in ids:
        wait_until(
            lambda j=job_id: served.get(f"/v1/narrations/{j}", headers=AUTH).json()["status"] == "completed",
            180,
            f"{job_id} to finish",
        )

    url = feed_url(served)
    token = url.split("token=")[1]
    got = requests.get(url, timeout=30)
    assert got.status_code == 200
    etree.fromstring(got.content, etree.XMLParser(recover=False, resolve_entities=False))  # raises on one bad char
    parsed = feedparser.parse(got.content)
    assert not parsed.bozo, parsed.bozo_exception
    assert {e.id: e.title for e in parsed.entries} == ids
    [page] = [e for e in parsed.entries if ids[e.id] == "The Harbor at Dawn"]
    chapters = requests.get(next(v for k, v in page.items() if k == "podcast_chapters")["url"], timeout=30).json()
    assert [c["title"] for c in chapters["chapters"]] == ["Chapter One"]

    # The same answer for an unknown feed, a bad name, a missing, wrong or revoked token, on each route.
    base = f"{served.url}/feeds"
    job_id = page.id
    audio = page.enclosures[0].href.split("?")[0].rsplit("/", 1)[1]
    routes = [".xml", f"/{job_id}/chapters.json", f"/{job_id}/cover", f"/{job_id}/{audio}"]

    def asked(name: str, given: str | None) -> list[tuple[int, bytes, tuple]]:
        query = {"token": given} if given is not None else {}
        return [answer(requests.get(f"{base}/{name}{route}", params=query, timeout=30)) for route in routes]

    assert all(a[0] == 200 for a in asked("news", token)[:2])  # the right token: the feed and its chapters
    refused = [
        *asked("nothing", token),
        *asked("nothing", "x"),
        *asked("news", None),
        *asked("news", "wrong"),
        *asked("news", token[:-1]),
        *asked("BAD%20NAME!", token),
    ]
    assert narrate(served.env, "feed", "revoke", "news").returncode == 0
    refused += asked("news", token)  # revoked
    assert {r[0] for r in refused} == {404}
    assert len(set(refused)) == 1, {r[1] for r in refused}

    # The token never reaches the server's log (uvicorn's access log prints each path and query).
    logs = output(served.proc)
    assert "/feeds/news.xml?token=[redacted]" in logs, logs[-3000:]
    assert token not in logs and token[:-1] not in logs
