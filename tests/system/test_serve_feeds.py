"""Podcast feeds of `narrate serve` against a real server (with an API key, so feed URLs need their
token), worker and embedded Valkey on the tiny checkpoint: three narrations put in one feed (two by
`POST /v1/narrations`, one by `narrate submit --feed`) make a feed that `feedparser` reads as a
podcast app does; each enclosure downloads whole and by Range and decodes to its duration; the
chapters are Podcasting 2.0 JSON; a missing, wrong or revoked token is 404; a deleted narration
leaves the feed."""

from __future__ import annotations

import json

import feedparser
import pytest
import requests
from helpers.audio import decoded_samples
from helpers.procs import narrate, wait_until
from helpers.web import serve

KEY = "a-long-random-key-for-the-feeds-0123"
AUTH = {"Authorization": f"Bearer {KEY}"}
BOOK = "# Part One\n\nThe first part has two sentences. Here is the second.\n\n# Part Two\n\nA short ending.\n"


@pytest.fixture(scope="module")
def served(checkpoint):
    s = serve(checkpoint, NARRATE_API_KEY=KEY).with_worker()
    s.env["NARRATE_PUBLIC_URL"] = s.url
    yield s
    logs = s.close()
    assert "Traceback" not in logs, logs[-4000:]


def post_text(served, text: str, voice_wav, **fields: str) -> str:
    with open(voice_wav, "rb") as f:
        made = served.post(
            "/v1/narrations", data={"text": text, "feed": "news", **fields}, files={"voice_sample": f}, headers=AUTH
        )
    assert made.status_code == 202, made.text
    return made.json()["id"]


def finished(served, job_id: str) -> dict:
    wait_until(
        lambda: served.get(f"/v1/narrations/{job_id}", headers=AUTH).json()["status"] == "completed",
        120,
        f"{job_id} to finish",
    )
    return served.get(f"/v1/narrations/{job_id}", headers=AUTH).json()


def feed_url(served) -> str:
    shown = narrate(served.env, "feed", "show", "news", "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)["url"]


def test_a_feed_of_three_narrations_reads_as_a_podcast(served, voice_wav, tmp_path):
    book = tmp_path / "book.md"
    book.write_text(BOOK)
    by_cli = narrate(
        served.env, "submit", str(book), "--voice", str(voice_wav), "--feed", "news", "--format", "m4b", "--json"
    )
    assert by_cli.returncode == 0, by_cli.stderr
    ids = [json.loads(by_cli.stdout)["id"]]
    ids += [
        post_text(served, "An article about rain. It fell all day.", voice_wav),
        post_text(served, "A report on the harbor. Ships came in.", voice_wav, format="m4b"),
    ]
    jobs = {job_id: finished(served, job_id) for job_id in ids}

    url = feed_url(served)
    assert url.startswith(f"{served.url}/feeds/news.xml?token=")
    got = requests.get(url, timeout=30)
    assert got.status_code == 200 and got.headers["content-type"].startswith("application/rss+xml")
    parsed = feedparser.parse(got.content)
    assert not parsed.bozo, parsed.bozo_exception
    assert parsed.feed.title == "news" and len(parsed.entries) == 3
    assert {e.id for e in parsed.entries} == set(ids)
    for entry in parsed.entries:
        job = jobs[entry.id]
        [enclosure] = entry.enclosures
        [audio] = [f for f in job["outputs"] if f["name"] == enclosure.href.split("/")[-1].split("?")[0]]
        assert int(enclosure.length) == audio["bytes"] and enclosure.type.startswith("audio/")
        part = requests.get(enclosure.href, headers={"Range": "bytes=0-99"}, timeout=30)
        assert part.status_code == 206 and len(part.content) == 100
        whole = requests.get(enclosure.href, timeout=30)
        assert whole.status_code == 200 and len(whole.content) == audio["bytes"]
        assert whole.content[:100] == part.content
        saved = tmp_path / f"{entry.id}{audio['name'][audio['name'].rfind('.') :]}"
        saved.write_bytes(whole.content)
        seconds = len(decoded_samples(saved)) / 24000
        assert seconds == pytest.approx(job["duration_s"], abs=0.1)
        assert int(entry.itunes_duration) == round(job["duration_s"])
    [book_entry] = [e for e in parsed.entries if e.id == ids[0]]
    chapters_url = next(v for k, v in book_entry.items() if k == "podcast_chapters")["url"]
    chapters = requests.get(chapters_url, timeout=30).json()
    assert chapters["version"] == "1.2.0"
    assert [c["title"] for c in chapters["chapters"]] == ["Part One", "Part Two"]
    assert chapters["chapters"][0]["startTime"] == 0

    # The token: none, a wrong one, or a revoked one is 404 (as an unknown feed is).
    bare = url.split("?")[0]
    assert requests.get(bare, timeout=30).status_code == 404
    assert requests.get(bare, headers=AUTH, timeout=30).status_code == 404  # the API key is not the feed's token
    assert requests.get(bare + "?token=wrong", timeout=30).status_code == 404
    assert requests.get(f"{served.url}/feeds/nothing.xml?token=x", timeout=30).status_code == 404
    revoked = narrate(served.env, "feed", "revoke", "news")
    assert revoked.returncode == 0 and "the old URL is revoked" in revoked.stdout
    assert requests.get(url, timeout=30).status_code == 404
    assert requests.get(parsed.entries[0].enclosures[0].href, timeout=30).status_code == 404
    new = feed_url(served)
    assert new != url and requests.get(new, timeout=30).status_code == 200

    # A deleted narration leaves the feed; `feed list` counts what is left.
    assert served.delete(f"/v1/narrations/{ids[1]}", headers=AUTH).status_code == 200
    assert len(feedparser.parse(requests.get(new, timeout=30).content).entries) == 2
    listed = narrate(served.env, "feed", "list", "--json")
    assert [json.loads(line)["narrations"] for line in listed.stdout.splitlines()] == [2]


def test_bad_feed_names_are_one_line_and_enqueue_nothing(served, voice_wav):
    before = served.get("/v1/narrations", headers=AUTH).json()["data"]
    with open(voice_wav, "rb") as f:
        bad = served.post(
            "/v1/narrations", data={"text": "Hi.", "feed": "no spaces/here"}, files={"voice_sample": f}, headers=AUTH
        )
    assert bad.status_code == 400 and "feed name" in bad.json()["error"]["message"]
    assert served.get("/v1/narrations", headers=AUTH).json()["data"] == before
    shown = narrate(served.env, "feed", "show", "nothing")
    assert shown.returncode == 1 and "no feed named 'nothing'" in shown.stderr
