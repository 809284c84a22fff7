"""Feeds without a server process: `submit --feed` and a schedule with `--feed` put their jobs in the
feed (made on first use, with a token); the RSS of finished narrations is well-formed and escapes
what a document's name holds; names are checked; revoking changes the token."""

from __future__ import annotations

import json
import os
import time
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import pytest
from helpers.cli import invoke
from helpers.fake import fake_env
from narrate.jobs.errors import BadInput
from narrate.jobs.feeds import rss, store


@pytest.fixture
def lib(external_redis, env, home):
    return fake_env(env, home), external_redis


def test_submit_and_a_schedule_put_their_jobs_in_the_feed(lib, home, voice_wav):
    env, r = lib
    doc = home / "a.txt"
    doc.write_text("An article.")
    ran = invoke(env, "submit", str(doc), "--voice", str(voice_wav), "--feed", "News", "--json")
    assert ran.returncode == 0, ran.stderr
    first = json.loads(ran.stdout)["id"]
    feed = store.get(r, "news")
    assert store.items(r, "news") == [first] and len(feed.token) >= 24
    (home / "watched").mkdir()
    story = home / "watched" / "story.txt"
    story.write_text("A story arrives in the folder.")
    os.utime(story, (time.time() - 60, time.time() - 60))
    ran = invoke(
        env,
        "schedule",
        "add",
        "daily",
        "--cron",
        "0 2 * * *",
        "--watch",
        str(home / "watched"),
        "--voice",
        str(voice_wav),
        "--feed",
        "news",
    )
    assert ran.returncode == 0, ran.stderr
    ran = invoke(env, "schedule", "run", "daily", "--json")
    [sub] = json.loads(ran.stdout)["submitted"]
    assert store.items(r, "news") == [sub["job"], first]  # newest first
    assert store.get(r, "news").token == feed.token  # the feed was made once
    assert store.revoke(r, "news").token != feed.token
    listed = invoke(env, "feed", "list")
    assert listed.returncode == 0 and listed.stdout.startswith("news: 2 narrations  http://127.0.0.1:8000/feeds/news")


@pytest.mark.parametrize("name", ["", "a b", "../x", "-x", "x" * 65, "é"])
def test_a_bad_feed_name_is_refused(name):
    with pytest.raises(BadInput, match="feed name"):
        store.check_feed_name(name)


def test_the_rss_is_well_formed_and_escapes_names():
    chapters = [{"title": "One & two", "start_s": 0.0}]
    when = datetime(2026, 12, 2, tzinfo=UTC)
    episode = rss.Episode(
        "narrate-1", 'A <b>"bold"</b> & odd name', when, "a.m4b", 1234, "audio/x-m4b", 61.4, chapters, True, "alice"
    )
    body = rss.render("news", "News", "http://host:8000/", [episode], "tok en")
    root = ET.fromstring(body)
    item = root.find("channel/item")
    assert item is not None and item.findtext("title") == 'A <b>"bold"</b> & odd name'
    enclosure = item.find("enclosure")
    assert (
        enclosure is not None and enclosure.get("url") == "http://host:8000/feeds/news/narrate-1/a.m4b?token=tok%20en"
    )
    assert item.findtext(f"{{{rss.ITUNES}}}duration") == "61"
    assert item.findtext("pubDate") == "Wed, 02 Dec 2026 00:00:00 +0000"
    assert rss.chapters_json(episode) == {"version": "1.2.0", "chapters": [{"startTime": 0.0, "title": "One & two"}]}


def test_an_episode_with_subtitles_carries_its_transcript_and_the_feed_its_medium():
    when = datetime(2026, 12, 2, tzinfo=UTC)
    told = rss.Episode("narrate-2", "Told", when, "b.mp3", 10, "audio/mpeg", 3.0, transcript="b.vtt")
    plain = rss.Episode("narrate-3", "Plain", when, "c.mp3", 10, "audio/mpeg", 3.0)
    root = ET.fromstring(rss.render("news", "News", "http://host:8000/", [told, plain], "tok"))
    assert root.findtext(f"channel/{{{rss.PODCAST}}}medium") == "audiobook"
    first, second = root.findall("channel/item")
    [transcript] = first.findall(f"{{{rss.PODCAST}}}transcript")
    assert transcript.attrib == {
        "url": "http://host:8000/feeds/news/narrate-2/transcript.vtt?token=tok",
        "type": "text/vtt",
        "rel": "captions",
    }
    assert second.find(f"{{{rss.PODCAST}}}transcript") is None
