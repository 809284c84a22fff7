"""Read-along books without a worker: sentences found in XHTML and wrapped without changing what it
shows (inline elements split at a sentence's edge, footnotes left out, named entities, accents
written two ways, an id already taken); word-level media overlays and word-level WebVTT made from
built word timings; the audiobook manifest valid against the Readium schema; `--readalong` checked
and left out of the job spec when not asked."""

from __future__ import annotations

import json
import re
import zipfile
from datetime import UTC, datetime

import pytest
from helpers.readalong import (
    EPUBCHECK_MISSING,
    epubcheck,
    epubcheck_command,
    overlays,
    readium_validator,
    w3c_validator,
)
from lxml import etree
from narrate.jobs.api.options import Options
from narrate.jobs.audio.bookmeta import parse_readalong
from narrate.jobs.audio.subtitles import Cue
from narrate.jobs.book.spec import BadSpec, JobSpec
from narrate.jobs.documents.documents import parse_document
from narrate.jobs.errors import BadInput
from narrate.jobs.readalong import manifest
from narrate.jobs.readalong.overlay_epub import Narration, write_epub
from narrate.jobs.readalong.package import BookInfo
from narrate.jobs.readalong.timing import Clip, placed, word_clips
from narrate.jobs.readalong.word_vtt import word_vtt
from narrate.jobs.readalong.xhtml_pages import Page, mark, parse_xhtml

XHTML = "http://www.w3.org/1999/xhtml"


def marked(body: str, sentences: list[str], words: dict[int, list[str]] | None = None) -> tuple[Page, str]:
    raw = f'<?xml version="1.0"?><html xmlns="{XHTML}"><head><title>t</title></head><body>{body}</body></html>'
    page = Page("p.xhtml", parse_xhtml(raw.encode(), "p.xhtml"))
    before = "".join(page.body.itertext())
    assert mark([page], sentences, words) == sum(1 for _ in page.marked)
    assert "".join(page.body.itertext()) == before  # not a character added, lost or moved
    return page, etree.tostring(page.body, encoding="unicode").replace(f' xmlns="{XHTML}"', "")


def span_text(page: Page, ident: str) -> str:
    [el] = [e for e in page.body.iter() if e.get("id") == ident]
    return "".join(el.itertext())


def test_each_sentence_gets_a_span_and_the_text_stays_as_it_was():
    body = (
        '<p>The keeper climbed.<sup><a href="#n1">1</a></sup> <em>It was late. The sea was loud.</em> '
        'Rain hit <a href="x.xhtml" id="k">the glass. Ships</a> waited &amp; watched.</p>'
        '<aside epub:type="footnote" xmlns:epub="http://www.idpf.org/2007/ops" id="n1">'
        "<p>The keeper climbed.</p></aside>"
    )
    sentences = [
        "The keeper climbed.",
        "It was late.",
        "The sea was loud.",
        "Rain hit the glass.",
        "Ships waited & watched.",
    ]
    page, html = marked(body, sentences)
    assert page.marked == {i: f"nr-s{i}" for i in range(5)}
    assert [span_text(page, f"nr-s{i}").strip() for i in range(5)] == sentences  # a space may end an element
    assert "<sup>" not in html.split('id="nr-s0"')[1].split("</span>")[0]  # the footnote mark stays outside
    assert html.count("<em>") == 1  # both sentences inside the emphasis: it is not split
    assert html.count('href="x.xhtml"') == 2 and html.count('id="k"') == 1  # the link split at the sentence's edge
    assert "nr-s" not in html.split("<aside")[1]  # a footnote is not read: its sentence is not marked there


def test_entities_accents_and_ids_already_taken():
    body = '<p id="nr-s0">Caf&eacute; au lait,&nbsp;please.</p><p>Cafe\u0301 noir.</p>'
    page, _ = marked(body, ["Café au lait,\u00a0please.", "Café noir."])
    assert page.marked == {0: "nr-s0-2", 1: "nr-s1"}
    assert span_text(page, "nr-s0-2") == "Café au lait,\u00a0please."


def test_a_sentence_not_found_is_left_out_and_the_next_ones_are_found():
    page, _ = marked("<p>One here. Two there. Three now.</p>", ["One here.", "Not in the page.", "Three now."])
    assert page.marked == {0: "nr-s0", 2: "nr-s2"}


def test_words_get_spans_inside_their_sentence():
    page, html = marked(
        "<p>Hello, <b>big</b> world. Bye.</p>", ["Hello, big world.", "Bye."], {0: ["Hello", "big", "nowhere", "world"]}
    )
    assert page.words[0] == ["nr-s0-w1", "nr-s0-w2", None, "nr-s0-w4"]
    assert [span_text(page, w) for w in ("nr-s0-w1", "nr-s0-w2", "nr-s0-w4")] == ["Hello", "big", "world"]
    assert '<b><span id="nr-s0-w2">big</span></b>' in html


def words_of(sentence_start: float) -> dict[int, list[tuple[str, float, float]]]:
    """Built word timings of sentence 1, "The sea was loud.", in seconds from its own start."""
    return {1: [("The", 0.05, 0.2), ("sea", 0.25, 0.6), ("was", 0.7, 0.85), ("loud", 0.9, 1.4)]}


def test_word_clips_cover_the_sentence_without_a_gap():
    clip = Clip(1, 10.0, 11.5)
    on_book = placed(clip, words_of(10.0)[1])
    assert on_book[0] == ("The", 10.05, 10.2)
    spans = word_clips(clip, on_book)
    assert spans[0][0] == 10.0 and spans[-1][1] == 11.5
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert placed(clip, [("late", 1.2, 9.0), ("early", 0.1, 0.2)])[1][1] >= 11.2  # kept in order, inside the clip


@pytest.mark.skipif(epubcheck_command() is None, reason=EPUBCHECK_MISSING)
def test_word_level_overlays_from_built_timings_pass_epubcheck(tmp_path):
    doc = parse_document(b"# Night\n\nIt was late. The sea was loud.\n", title="Night", origin="night.md")
    assert doc.sentences == ["Night", "It was late.", "The sea was loud."]
    clips = {0: Clip(0, 0.0, 0.8), 1: Clip(1, 1.2, 2.0), 2: Clip(2, 2.3, 3.8)}
    words = {2: [("The", 0.05, 0.2), ("sea", 0.25, 0.6), ("was", 0.7, 0.85), ("loud", 0.9, 1.4)]}
    audio = tmp_path / "a.mp3"
    audio.write_bytes(b"\xff\xfb\x90\x64" + b"\0" * 400)  # EPUBCheck does not decode audio
    info = BookInfo(
        "urn:uuid:00000000-0000-4000-8000-000000000001",
        "Night",
        "en",
        datetime(2026, 1, 2, tzinfo=UTC),
        "Ada Lovelace",
        "Ann Reader",
    )
    out = tmp_path / "night.epub"
    written = write_epub(out, doc, Narration(doc.sentences, clips, {0: "Night"}, words), info, audio)
    assert (written.sentences, written.marked) == (3, 3)
    errors, _, report = epubcheck(out)
    assert errors == 0, report
    pars = overlays(out)
    assert pars["nr-s1"] == (1.2, 2.0)  # a sentence without words: one par
    word_pars = [pars[f"nr-s2-w{j}"] for j in range(1, 5)]
    assert word_pars == [(2.3, 2.55), (2.55, 3.0), (3.0, 3.2), (3.2, 3.8)]
    with zipfile.ZipFile(out) as z:
        smil = z.read("OEBPS/overlays/ch001.smil").decode()
        page = z.read("OEBPS/text/ch001.xhtml").decode()
    assert re.search(r'<seq id="seq-nr-s2" epub:textref="../text/ch001.xhtml#nr-s2">', smil)
    assert '<span id="nr-s2-w2">sea</span>' in page


def test_word_level_vtt_from_built_timings():
    rate = 24000
    cues = [
        Cue(0, rate * 1, rate * 3, 0, "Hello, <big> world & more!"),
        Cue(1, rate * 4, rate * 5, 0, "No words.", "alice"),
    ]
    words = {
        0: [("Hello", 0.0, 0.4), ("big", 0.5, 0.8), ("absent", 0.85, 0.9), ("world", 0.9, 1.4), ("more", 1.5, 1.9)]
    }
    text = word_vtt(cues, rate, words)
    assert text.startswith("WEBVTT\n\n")
    blocks = text.split("\n\n")[1:]
    head, line = blocks[0].split("\n", 1)
    assert head == "00:00:01.000 --> 00:00:03.000"
    # The first word starts with the cue (no timestamp); each later word gets one, inside the cue, in order.
    assert line.strip() == "Hello, &lt;<00:00:01.500>big&gt; <00:00:01.900>world &amp; <00:00:02.500>more!"
    stamps = re.findall(r"<(\d\d:\d\d:\d\d\.\d{3})>", line)
    assert stamps == sorted(stamps) and all("00:00:01.000" < s < "00:00:03.000" for s in stamps)
    assert blocks[1].strip() == "00:00:04.000 --> 00:00:05.000\n<v alice>No words."


def test_the_audiobook_manifest_is_valid_and_points_into_the_audio():
    made = manifest.audiobook(
        "my book.audiobook.json",
        "my book.m4b",
        3725.5,
        [(0.0, "Opening"), (61.25, "Two")],
        identifier="urn:uuid:00000000-0000-4000-8000-000000000002",
        title="My Book",
        language="en",
        modified=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        author="Ada Lovelace",
        narrator="Ann Reader, Alice Sample",
    )
    assert [e.message for e in readium_validator().iter_errors(made)] == []
    assert made["metadata"]["conformsTo"] == manifest.PROFILE
    assert made["metadata"]["narrator"] == ["Ann Reader", "Alice Sample"]
    assert made["readingOrder"][0] == {
        "href": "my%20book.m4b",
        "type": "audio/mp4",
        "duration": 3725.5,
        "title": "My Book",
    }
    assert [t["href"] for t in made["toc"]] == ["my%20book.m4b#t=0", "my%20book.m4b#t=61.25"]
    assert json.loads(manifest.render(made)) == made


def test_the_w3c_audiobooks_manifest_is_valid_with_iso_durations_and_an_html_toc():
    ident = "urn:uuid:00000000-0000-4000-8000-000000000003"
    made = manifest.w3c(
        "my book.toc.html",
        "my book.mp3",
        3725.5,
        identifier=ident,
        title="My Book",
        language="en",
        modified=datetime(2026, 1, 2, tzinfo=UTC),
        narrator="Ann Reader, Alice Sample",
    )
    assert [e.message for e in w3c_validator().iter_errors(made)] == []
    assert made["conformsTo"] == "https://www.w3.org/TR/audiobooks/" and made["type"] == "Audiobook"
    assert made["duration"] == made["readingOrder"][0]["duration"] == "PT1H2M5.5S"
    assert made["readBy"] == ["Ann Reader", "Alice Sample"] and "author" not in made
    assert made["resources"] == [
        {"type": "LinkedResource", "rel": "contents", "url": "my%20book.toc.html", "encodingFormat": "text/html"}
    ]
    assert [manifest.iso_duration(s) for s in (0, 0.25, 60, 3600, 5400.125)] == [
        "PT0S",
        "PT0.25S",
        "PT1M",
        "PT1H",
        "PT1H30M0.125S",
    ]
    import lxml.html

    marks = [(0.0, "One"), (61.25, "Two & more")]
    page = manifest.toc_html("A <b>", "en", "my book.mp3", marks, "my book.publication.json")
    toc = lxml.html.document_fromstring(page)
    [nav] = toc.iter("nav")
    assert nav.get("role") == "doc-toc"
    assert [(a.get("href"), a.text) for a in nav.iter("a")] == [
        ("my%20book.mp3#t=0", "One"),
        ("my%20book.mp3#t=61.25", "Two & more"),
    ]
    assert toc.find("head/link").attrib == {"rel": "publication", "href": "my%20book.publication.json"}


def test_the_option_is_checked_and_left_out_of_a_spec_that_does_not_ask():
    assert parse_readalong("manifest, EPUB") == "epub,manifest"
    assert parse_readalong("w3c,epub,manifest") == "epub,manifest,w3c"
    with pytest.raises(BadInput, match="--readalong: unknown format 'pdf'"):
        parse_readalong("pdf")
    with pytest.raises(BadInput, match="--split chapters"):
        Options.make(readalong="epub", split="chapters")
    assert Options.make(readalong="EPUB", split="chapters+book").book.readalong == "epub"
    plain = JobSpec(document="d", voice="a" * 64, output="b.m4b")
    assert "readalong" not in plain.to_json()
    asked = JobSpec(document="d", voice="a" * 64, output="b.m4b", readalong="epub,manifest")
    assert JobSpec.from_json(asked.to_json()).readalong == "epub,manifest"
    with pytest.raises(BadSpec, match="readalong"):
        JobSpec.from_json({**plain.to_json(), "readalong": "pdf"})
