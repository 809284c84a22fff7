"""Text narrate writes into XML: every character XML 1.0 refuses (C0 controls, lone surrogates,
U+FFFE/U+FFFF) and the bidi controls are removed, in the feed's RSS (a strict parser reads it, and
feedparser shows the episode), its JSON chapters, a library's OPF and ffmpeg's metadata file; an
episode is titled by its book's title, or a title made from a file name, never the bare name."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import feedparser
import pytest
from lxml import etree
from narrate.jobs.audio.book_writer import ffmetadata
from narrate.jobs.feeds import rss, titles
from narrate.jobs.library.metadata import BookInfo, opf
from narrate.jobs.xmltext import xml_text

# Every class: C0 controls (not tab/LF/CR), DEL and C1, lone surrogates, the two non-characters XML
# refuses, the bidi embeddings, overrides and isolates.
BAD = (
    "".join(chr(c) for c in range(0x20) if c not in (9, 10, 13))
    + "\x7f\x85\x9f\ud800\udfff\ufffe\uffff"
    + "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


def strict(body: bytes) -> etree._Element:
    return etree.fromstring(body, etree.XMLParser(recover=False, resolve_entities=False))


def test_xml_text_removes_what_xml_refuses_and_keeps_the_rest():
    assert xml_text(f"Ha{BAD}rbor") == "Harbor"
    kept = "tab\tline\ncr\r é ß 日本 \U0001f600 \ufffd \ue000 \u00a0"
    assert xml_text(kept) == kept
    for c in BAD:
        assert xml_text(c) == "", ascii(c)


def test_a_feed_of_names_with_any_character_parses_strictly_and_shows_the_episode():
    name = f"Ha{BAD}rbor \u202eevil.exe"
    chapters = [{"title": f"One{BAD}", "start_s": 0.0}, {"title": "Two\uffff", "start_s": 5.0}]
    episode = rss.Episode(
        "narrate-1",
        name,
        datetime(2026, 12, 2, tzinfo=UTC),
        f"a{BAD}.m4b",
        1234,
        "audio/x-m4b",
        61.4,
        chapters,
        True,
        f"ali{BAD}ce",
    )
    body = rss.render("news", f"News{BAD}", "http://host:8000/", [episode], "tok")
    root = strict(body)  # no recover: one bad character and this raises
    assert root.findtext("channel/title") == "News"
    assert root.findtext("channel/item/title") == "Harbor evil.exe"
    parsed = feedparser.parse(body)
    assert not parsed.bozo, parsed.bozo_exception
    assert [e.title for e in parsed.entries] == ["Harbor evil.exe"]
    said = json.dumps(rss.chapters_json(episode), ensure_ascii=False).encode()  # a lone surrogate would raise
    assert [c["title"] for c in json.loads(said)["chapters"]] == ["One", "Two"]


def test_a_librarys_opf_parses_strictly_whatever_the_book_says():
    info = BookInfo(
        title=f"The{BAD} Book",
        authors=[f"A{BAD}n Author"],
        narrators=["narrate"],
        job_id="narrate-1",
        series=f"Saga{BAD}",
        series_index="2",
        description=f"About{BAD} it.",
    )
    root = strict(opf(info))
    dc = "{http://purl.org/dc/elements/1.1/}"
    assert root.findtext(f".//{dc}title") == "The Book" and root.findtext(f".//{dc}creator") == "An Author"
    assert root.findtext(f".//{dc}description") == "About it."


def test_ffmetadata_holds_no_control_character():
    text = ffmetadata(f"Book{BAD}", [(0, 24000, f"One{BAD}")])
    assert text.encode("utf-8")  # a lone surrogate would raise here (the job would fail)
    assert "title=Book\n" in text and "title=One\n" in text


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("art2.txt", "art2"),
        ("harbor-11d97576cb.m4b", "harbor"),
        ("out/my_book-0123456789.mp3", "my book"),
        ("A Tale.epub", "A Tale"),
        (f"odd{BAD}.txt", "odd"),
        (".m4b", ""),
    ],
)
def test_a_title_from_a_file_name(name, title):
    assert titles.from_file_name(name) == title


def test_an_episode_is_titled_by_its_book_not_its_file(tmp_path):
    narration = {"id": "narrate-1", "document": "harbor-11d97576cb.txt", "progress": {}}
    file = {"name": "harbor-11d97576cb.m4b", "bytes": 10}
    assert rss.episode_of(narration, file, False).title == "harbor"
    assert rss.episode_of(narration, file, False, "The Harbor at Dawn").title == "The Harbor at Dawn"
    assert rss.episode_of({**narration, "document": None}, file, False).title == "harbor"
    untagged = tmp_path / "art2-0123456789.wav"
    untagged.write_bytes(b"RIFF")
    assert titles.episode_title(untagged, "art2.txt", "narrate-1") == "art2"
    assert titles.episode_title(untagged, None, "narrate-1") == "art2"
