"""Podcasting 2.0 transcripts in `narrate serve`'s feeds (a real server with an API key and a
fake-engine worker): a narration that wrote WebVTT subtitles carries `podcast:transcript`
(`type="text/vtt"`, `rel="captions"`, its URL with the feed's token) beside `podcast:chapters`, one
without subtitles carries none, and the feed says `podcast:medium` audiobook. feedparser and
gPodder's podcastparser read the tags; the transcript URL serves the very file the narration wrote,
and is 404 without the token and for an episode without subtitles.

podcastparser 0.6.11 knows the Podcasting 2.0 namespace only by its first URI (the GitHub page of
its specification); the namespace's own document says readers must take
https://podcastindex.org/namespace/1.0, which narrate writes, as the same, so the test tells
podcastparser that URI as well."""

from __future__ import annotations

import io
import json

import feedparser
import podcastparser
import pytest
import requests
from helpers.procs import narrate, wait_until
from helpers.web import serve
from narrate.jobs.feeds.rss import PODCAST

KEY = "a-long-random-key-for-the-transcripts-0123"
AUTH = {"Authorization": f"Bearer {KEY}"}
BOOK = "# Part One\n\nThe first part has two sentences. Here is the second.\n\n# Part Two\n\nA short ending.\n"


@pytest.fixture(scope="module")
def served(checkpoint):
    s = serve(checkpoint, NARRATE_API_KEY=KEY, NARRATE_ENGINE="fake", NARRATE_FAKE_DELAY_MS="5").with_worker()
    s.env["NARRATE_PUBLIC_URL"] = s.url
    yield s
    logs = s.close()
    assert "Traceback" not in logs, logs[-4000:]


def post_text(served, text: str, voice_wav, **fields: str) -> str:
    with open(voice_wav, "rb") as f:
        made = served.post(
            "/v1/narrations",
            data={"text": text, "feed": "tales", "format": "mp3", **fields},
            files={"voice_sample": f},
            headers=AUTH,
        )
    assert made.status_code == 202, made.text
    job_id = made.json()["id"]
    wait_until(
        lambda: served.get(f"/v1/narrations/{job_id}", headers=AUTH).json()["status"] == "completed",
        120,
        f"{job_id} to finish",
    )
    return job_id


def test_a_narration_with_subtitles_carries_its_transcript(served, voice_wav, monkeypatch):
    with_vtt = post_text(served, BOOK, voice_wav, subtitles="vtt,json")
    without = post_text(served, "An article about rain. It fell all day.", voice_wav)
    shown = narrate(served.env, "feed", "show", "tales", "--json")
    assert shown.returncode == 0, shown.stderr
    url = json.loads(shown.stdout)["url"]
    body = requests.get(url, timeout=30).content

    parsed = feedparser.parse(body)
    assert not parsed.bozo, parsed.bozo_exception
    assert parsed.feed["podcast_medium"] == "audiobook"
    entries = {e.id: e for e in parsed.entries}
    told = entries[with_vtt]["podcast_transcript"]
    assert told["type"] == "text/vtt" and told["rel"] == "captions"
    assert told["url"] == f"{served.url}/feeds/tales/{with_vtt}/transcript.vtt?token={url.split('token=')[1]}"
    assert "podcast_transcript" not in entries[without] and "podcast_chapters" in entries[with_vtt]

    served_vtt = requests.get(told["url"], timeout=30)
    assert served_vtt.status_code == 200 and served_vtt.headers["content-type"].startswith("text/vtt")
    job = served.get(f"/v1/narrations/{with_vtt}", headers=AUTH).json()
    [listed] = [f for f in job["outputs"] if f["name"].endswith(".vtt")]
    written = served.get(listed["url"], headers=AUTH)
    assert served_vtt.content == written.content and served_vtt.text.startswith("WEBVTT")
    assert "The first part has two sentences." in served_vtt.text
    assert requests.get(told["url"].split("?")[0], timeout=30).status_code == 404  # the token is needed
    other = told["url"].replace(with_vtt, without)
    assert requests.get(other, timeout=30).status_code == 404

    # gPodder's parser: the transcript and the chapters of each episode, under the namespace's current URI.
    monkeypatch.setitem(podcastparser.Namespace.NAMESPACES, PODCAST, "podcast")
    podcast = podcastparser.parse(url, io.BytesIO(body))
    episodes = {e["guid"]: e for e in podcast["episodes"]}
    assert episodes[with_vtt]["transcript_url"] == told["url"]
    chapters_url = episodes[with_vtt]["chapters_json_url"]
    assert chapters_url == f"{served.url}/feeds/tales/{with_vtt}/chapters.json?{url.split('?')[1]}"
    assert "transcript_url" not in episodes[without]
    chapters = requests.get(chapters_url, timeout=30).json()
    assert chapters["version"] == "1.2.0" and [c["title"] for c in chapters["chapters"]] == ["Part One", "Part Two"]
