"""Read-along books end to end (a fake-engine worker): an EPUB in, an EPUB 3 with media overlays out
beside the m4b, which EPUBCheck accepts with no error, whose pages show the very text they showed
(each sentence in its span), whose every sentence has a clip within one frame (80 ms) of the
timing manifest's, whose package says each overlay's duration, the total and the active class, and
which holds the book's own audio; the audiobook manifests beside it are valid against the Readium
and the W3C Publication Manifest schemas, with the narrators, ISO 8601 durations (W3C) and tables of
contents pointing into the m4b at the chapters' times. A Markdown document
read to FLAC becomes an EPUB of narrate's own pages with an AAC copy of the audio."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import zipfile
from pathlib import Path

import lxml.html
import pytest
from helpers.fake import fake_env
from helpers.ops import submit
from helpers.procs import narrate, wait_for_job
from helpers.readalong import (
    EPUBCHECK_MISSING,
    clock,
    epubcheck,
    epubcheck_command,
    make_readalong_epub,
    overlays,
    readium_validator,
    w3c_validator,
)
from lxml import etree

FRAME_S = 0.080  # one codec frame (12.5 a second)
OPF = "{http://www.idpf.org/2007/opf}"
needs_epubcheck = pytest.mark.skipif(epubcheck_command() is None, reason=EPUBCHECK_MISSING)


def iso_seconds(duration: str) -> float:
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", duration)
    assert m, duration
    return int(m.group(1) or 0) * 3600 + int(m.group(2) or 0) * 60 + float(m.group(3) or 0)


def run_book(env: dict, home: Path, doc: Path, out: Path, voice_wav: Path, *extra: str) -> None:
    job_id = submit(env, doc, voice_wav, out, *extra)
    assert narrate(env, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(job_id)
    assert st["status"] == "finished", st


def body_text(xhtml: bytes) -> str:
    root = etree.fromstring(xhtml)
    body = root.find("{http://www.w3.org/1999/xhtml}body")
    return "".join(body.itertext())


def check_clips(epub: Path, timing: dict) -> None:
    """Every sentence of the timing manifest has a par whose clip is within a frame of its times."""
    clips = overlays(epub)
    for s in timing["sentences"]:
        begin, end = clips[f"nr-s{s['index']}"]
        assert abs(begin - s["start"]) <= FRAME_S and abs(end - s["end"]) <= FRAME_S, (s, begin, end)
    assert len(clips) == len(timing["sentences"])


def check_package(epub: Path) -> etree._Element:
    """The package document: each overlay has its duration, the total is their sum, an active class."""
    with zipfile.ZipFile(epub) as z:
        assert z.namelist()[0] == "mimetype" and z.getinfo("mimetype").compress_type == zipfile.ZIP_STORED
        container = etree.fromstring(z.read("META-INF/container.xml"))
        opf_path = container.find(".//{urn:oasis:names:tc:opendocument:xmlns:container}rootfile").get("full-path")
        opf = etree.fromstring(z.read(opf_path))
    assert opf.get("version") == "3.0"
    metas = opf.findall(f"{OPF}metadata/{OPF}meta")
    durations = {m.get("refines"): clock(m.text) for m in metas if m.get("property") == "media:duration"}
    total = durations.pop(None)
    smil_ids = {i.get("id") for i in opf.iter(f"{OPF}item") if i.get("media-type") == "application/smil+xml"}
    assert {r.lstrip("#") for r in durations} == smil_ids and smil_ids
    assert abs(total - sum(durations.values())) < 0.01
    assert any(m.get("property") == "media:active-class" for m in metas)
    overlaid = [i for i in opf.iter(f"{OPF}item") if i.get("media-overlay")]
    assert {i.get("media-overlay") for i in overlaid} == smil_ids
    return opf


@pytest.mark.skipif(epubcheck_command() is None, reason=EPUBCHECK_MISSING)
def test_an_epub_becomes_a_readalong_epub_that_epubcheck_accepts(env, home, voice_wav):
    e = fake_env(env, home)
    source = make_readalong_epub(home / "keeper.epub")
    out = home / "out" / "keeper.m4b"
    run_book(
        e,
        home,
        source,
        out,
        voice_wav,
        "--readalong",
        "epub,manifest,w3c",
        "--subtitles",
        "json",
        "--narrator",
        "Ann Reader, Alice Sample",
    )
    epub = out.with_suffix(".epub")
    errors, warnings, report = epubcheck(epub)
    assert errors == 0, report

    timing = json.loads(out.with_suffix(".json").read_text())
    check_clips(epub, timing)
    opf = check_package(epub)
    narrators = [m.text for m in opf.iter(f"{OPF}meta") if m.get("property") == "media:narrator"]
    assert narrators == ["Ann Reader, Alice Sample"]

    with zipfile.ZipFile(source) as z:
        before = {n: z.read(n) for n in z.namelist()}
    with zipfile.ZipFile(epub) as z:
        after = {n: z.read(n) for n in z.namelist()}
    # What a reader sees is unchanged: each read page's text as it was, every other file kept as it was.
    for name in ("EPUB/ch1.xhtml", "EPUB/ch2.xhtml", "EPUB/ch3.xhtml"):
        assert body_text(after[name]) == body_text(before[name]), name
        assert b'id="nr-s' in after[name]
    assert after["EPUB/images/cover.png"] == before["EPUB/images/cover.png"]
    assert b"nr-s" not in after["EPUB/contents.xhtml"]  # a contents page is not read
    # The link holding part of a sentence is split at its edge, never dropped; the footnote stays out.
    ch1, ch2 = after["EPUB/ch1.xhtml"].decode(), after["EPUB/ch2.xhtml"].decode()
    assert "ninety-nine" in ch1 and "nr-s" not in ch1.split("ninety-nine")[0].rsplit("<aside", 1)[1]
    assert ch2.count('href="ch3.xhtml"') == 1
    # The audio inside is the book's own m4b.
    [audio] = [n for n in after if n.startswith("EPUB/narrate/audio")]
    assert hashlib.sha256(after[audio]).digest() == hashlib.sha256(out.read_bytes()).digest()

    manifest = json.loads(out.with_name("keeper.audiobook.json").read_text())
    errors_found = [e.message for e in readium_validator().iter_errors(manifest)]
    assert not errors_found, errors_found
    assert manifest["metadata"]["narrator"] == ["Ann Reader", "Alice Sample"]
    assert abs(manifest["metadata"]["duration"] - timing["duration"]) < 0.001
    whole = {
        "href": "keeper.m4b",
        "type": "audio/mp4",
        "duration": round(timing["duration"], 3),
        "title": "The Lighthouse Keeper",
    }
    assert manifest["readingOrder"] == [whole]
    toc = [(t["title"], float(t["href"].split("#t=")[1])) for t in manifest["toc"]]
    assert [t for t, _ in toc] == [c["title"] for c in timing["chapters"]] == ["Arrival", "The Storm", "Dawn"]
    for (_, at), chapter in zip(toc, timing["chapters"], strict=True):
        assert abs(at - chapter["start"]) < 0.001
    assert all(t["href"].startswith("keeper.m4b#t=") for t in manifest["toc"])

    # The W3C Audiobooks manifest: valid, its durations in ISO 8601, its HTML contents into the m4b.
    w3c = json.loads(out.with_name("keeper.publication.json").read_text())
    assert [e.message for e in w3c_validator().iter_errors(w3c)] == []
    assert w3c["readBy"] == ["Ann Reader", "Alice Sample"] and w3c["readingOrder"][0]["url"] == "keeper.m4b"
    assert abs(iso_seconds(w3c["duration"]) - timing["duration"]) < 0.001
    toc = lxml.html.parse(str(out.with_name("keeper.toc.html"))).getroot()
    links = [(a.text, a.get("href")) for a in toc.iter("a")]
    assert [t for t, _ in links] == ["Arrival", "The Storm", "Dawn"]
    for (_, href), chapter in zip(links, timing["chapters"], strict=True):
        assert href.startswith("keeper.m4b#t=") and abs(float(href.split("#t=")[1]) - chapter["start"]) < 0.001


@needs_epubcheck
def test_a_markdown_book_read_to_flac_becomes_an_epub_of_its_own_pages(env, home, voice_wav):
    import imageio_ffmpeg

    e = fake_env(env, home)
    doc = home / "notes.md"
    doc.write_text("# Part One\n\nA first line & more. A second <line>.\n\n# Part Two\n\nThe end.\n")
    out = home / "out" / "notes.flac"
    run_book(e, home, doc, out, voice_wav, "--readalong", "epub", "--subtitles", "json")
    epub = out.with_suffix(".epub")
    errors, _, report = epubcheck(epub)
    assert errors == 0, report
    timing = json.loads(out.with_suffix(".json").read_text())
    check_clips(epub, timing)
    check_package(epub)
    with zipfile.ZipFile(epub) as z:
        [audio] = [n for n in z.namelist() if n.startswith("OEBPS/audio/")]
        assert audio.endswith(".m4a")  # FLAC is no EPUB audio: an AAC copy
        (home / "inside.m4a").write_bytes(z.read(audio))
        page = z.read("OEBPS/text/ch001.xhtml").decode()
    assert "A first line &amp; more." in page and "A second &lt;line&gt;." in page
    probe = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-i", str(home / "inside.m4a"), "-f", "null", "-"],
        capture_output=True,
        text=True,
    )
    seconds = clock(probe.stderr.rsplit("time=", 1)[1].split()[0])
    assert abs(seconds - timing["duration"]) < 0.1
    assert not out.with_name("notes.audiobook.json").exists()  # only what was asked
    assert not out.with_name("notes.publication.json").exists()
