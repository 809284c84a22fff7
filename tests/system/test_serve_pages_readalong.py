"""The Job page's read-along in a real browser (Playwright driving the installed Chromium) against a
real server and a fake-engine worker: a finished narration with a timing manifest shows its text
under the player, sentence by sentence under its chapters; the sentence the player is in is lit
(after a seek, and while it plays on its own: the lit sentence follows the player's time), a click
on a sentence plays from its start, and a narration with WebVTT subtitles only reads along from
them. The page logs no console error (its Content Security Policy allows no inline script)."""

from __future__ import annotations

import re
import time

import pytest
from helpers.chromium import SKIP_REASON, find_chromium
from helpers.procs import wait_until
from helpers.web import Served, serve

pytestmark = pytest.mark.skipif(find_chromium() is None, reason=SKIP_REASON)
BOOK = (
    "# The Harbor\n\nShips came in at dawn. The gulls were loud. A bell rang twice.\n\n"
    "# The Storm\n\nRain hammered the glass all night. Nobody slept.\n\nBy morning the sea was calm.\n"
)


@pytest.fixture(scope="module")
def served(checkpoint):
    s = serve(checkpoint, NARRATE_ENGINE="fake", NARRATE_FAKE_DELAY_MS="5").with_worker()
    yield s
    logs = s.close()
    assert "Traceback" not in logs, logs[-4000:]


def narrated(served: Served, voice_wav, **fields: str) -> tuple[str, dict]:
    with open(voice_wav, "rb") as f:
        made = served.post("/v1/narrations", data={"text": BOOK, "format": "mp3", **fields}, files={"voice_sample": f})
    assert made.status_code == 202, made.text
    job_id = made.json()["id"]
    wait_until(lambda: served.get(f"/v1/narrations/{job_id}").json()["status"] == "completed", 120, "the narration")
    job = served.get(f"/v1/narrations/{job_id}").json()
    return job_id, job


def timing_of(served: Served, job: dict) -> dict:
    [listed] = [f for f in job["outputs"] if f["name"].endswith(".json")]
    return served.get(listed["url"]).json()


def lit_index(page, k: int) -> None:
    """Wait until sentence k is the one lit (a function, not a string: the page's CSP allows no eval)."""
    page.wait_for_function(
        "k => (document.querySelector('.readalong .sentence.current') || {dataset: {}}).dataset.index === String(k)",
        arg=k,
    )


def lit(page) -> list[str]:
    return page.locator(".readalong .sentence.current").all_inner_texts()


def test_the_job_page_reads_along_with_the_player(served, page, voice_wav):
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
    job_id, job = narrated(served, voice_wav, subtitles="json,vtt")
    timing = timing_of(served, job)
    sentences = timing["sentences"]
    page.goto(f"{served.url}/jobs/{job_id}")
    page.wait_for_selector(".readalong[data-ready=true]")
    assert page.locator(".readalong .sentence").all_inner_texts() == [s["text"] for s in sentences]
    assert page.locator(".readalong h3").all_inner_texts() == ["The Harbor", "The Storm"]  # the heading sentences
    assert [" ".join(t.split()) for t in page.locator(".readalong p").all_inner_texts()] == [
        "Ships came in at dawn. The gulls were loud. A bell rang twice.",
        "Rain hammered the glass all night. Nobody slept.",
        "By morning the sea was calm.",
    ]  # one paragraph each, not a chapter's text run together with its heading
    assert [s.get("paragraph") for s in sentences] == [0, 1, 1, 1, 2, 3, 3, 4]  # the timing manifest numbers them
    assert lit(page) == [sentences[0]["text"]]  # where the player stands: its start
    page.wait_for_function("() => document.querySelector('#book-audio').readyState >= 1")

    # A seek lights the sentence the time falls in, and keeps it lit through the pause after it.
    for k in (0, 4, len(sentences) - 1):
        s = sentences[k]
        middle = (s["start"] + s["end"]) / 2
        page.evaluate(f"document.querySelector('#book-audio').currentTime = {middle}")
        lit_index(page, k)
        assert lit(page) == [s["text"]]
    pause = (sentences[2]["end"] + sentences[3]["start"]) / 2
    page.evaluate(f"document.querySelector('#book-audio').currentTime = {pause}")
    lit_index(page, 2)

    # Played (muted: no gesture needed), the lit sentence follows the player's own time.
    page.evaluate(
        "(() => { const a = document.querySelector('#book-audio'); a.currentTime = 0; a.muted = true; "
        "return a.play(); })()"
    )
    seen = set()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(seen) < 3:
        state = page.evaluate(
            "(() => { const a = document.querySelector('#book-audio'); const c = document.querySelector("
            "'.readalong .sentence.current'); return [a.currentTime, c ? Number(c.dataset.index) : -1, a.paused]; })()"
        )
        at, index, paused = state
        if index >= 0 and not paused:
            expected = max(i for i, s in enumerate(sentences) if s["start"] <= at)
            assert abs(index - expected) <= 1, (at, index, expected)  # a frame may pass between the two reads
            seen.add(index)
        time.sleep(0.1)
    assert len(seen) >= 3, seen
    page.evaluate("document.querySelector('#book-audio').pause()")

    # A click on a sentence plays from its start.
    page.locator(".readalong .sentence").nth(5).click()
    at = page.evaluate("document.querySelector('#book-audio').currentTime")
    assert at == pytest.approx(sentences[5]["start"], abs=0.3)
    lit_index(page, 5)
    page.evaluate("document.querySelector('#book-audio').pause()")
    assert console == []


def test_webvtt_subtitles_alone_read_along_too(served, page, voice_wav):
    job_id, job = narrated(served, voice_wav, subtitles="vtt")
    page.goto(f"{served.url}/jobs/{job_id}")
    page.wait_for_selector(".readalong[data-ready=true]")
    texts = page.locator(".readalong .sentence").all_inner_texts()
    assert texts[:3] == ["The Harbor", "Ships came in at dawn.", "The gulls were loud."] and len(texts) == 8
    spans = page.locator(".readalong .sentence")
    starts = [float(x) for x in spans.evaluate_all("els => els.map(e => e.dataset.start)")]
    page.wait_for_function("() => document.querySelector('#book-audio').readyState >= 1")
    page.evaluate(f"document.querySelector('#book-audio').currentTime = {starts[6] + 0.01}")
    lit_index(page, 6)


def test_a_book_without_timings_shows_no_read_along(served, page, voice_wav):
    job_id, _ = narrated(served, voice_wav)
    page.goto(f"{served.url}/jobs/{job_id}")
    page.wait_for_selector("#book-audio")
    assert page.locator(".readalong").count() == 0


def test_an_epub_narration_with_word_timings_over_http(served, page, voice_wav):
    """`format=epub` and `word_timings=auto` through the HTTP API: the narration's files are the EPUB (its audio
    inside, its overlays word by word), the timing manifest and the word-level WebVTT, each fetched through its URL;
    the Job page lists them and logs no console error."""
    import io
    import zipfile

    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
    job_id, job = narrated(served, voice_wav, format="epub", word_timings="auto", subtitles="json")
    names = sorted(f["name"] for f in job["outputs"])
    assert [n.rsplit(".", 1)[-1] for n in names] == ["epub", "json", "vtt"] and names[2].endswith(".words.vtt"), names
    files = {f["name"]: served.get(f["url"]) for f in job["outputs"]}
    assert all(r.status_code == 200 for r in files.values())
    with zipfile.ZipFile(io.BytesIO(files[names[0]].content)) as z:
        assert z.read("mimetype") == b"application/epub+zip"
        assert any("/audio/book." in n for n in z.namelist()), z.namelist()
        smil = b"".join(z.read(n) for n in z.namelist() if n.endswith(".smil"))
    assert b"-w1" in smil  # word by word
    vtt = files[names[2]].text
    assert vtt.startswith("WEBVTT") and "Ships came in at dawn." in re.sub(r"<[^>]+>", "", vtt)
    page.goto(f"{served.url}/jobs/{job_id}")
    page.wait_for_selector("ul.downloads a")
    links = page.locator("ul.downloads a").evaluate_all("els => els.map(e => [e.getAttribute('href'), e.download])")
    assert sorted(href for href, _ in links) == sorted(f["url"] for f in job["outputs"])
    assert sorted(name.rsplit(".", 1)[-1] for _, name in links) == ["epub", "json", "vtt"]
    assert console == []


def test_a_book_delivered_as_an_epub_plays_its_audio_on_its_pages(served, voice_wav):
    """`format=epub`: the book is one EPUB, its audio inside; the pages' player plays that audio."""
    import io
    import zipfile

    job_id, job = narrated(served, voice_wav, **{"format": "epub"})
    assert [f["name"][-5:] for f in job["outputs"]] == [".epub"]  # no audio file of its own
    url = f"/v1/narrations/{job_id}/audio"
    for path in (f"/jobs/{job_id}", "/books"):
        assert f'src="{url}"' in served.get(path).text, path
    whole = served.get(url)
    assert whole.status_code == 200 and whole.headers["content-type"] == "audio/mp4", whole.text[:200]
    [listed] = [f for f in job["outputs"] if f["name"].endswith(".epub")]
    epub = served.get(listed["url"]).content
    with zipfile.ZipFile(io.BytesIO(epub)) as z:
        [inside] = [n for n in z.namelist() if n.endswith(".m4a")]
        assert whole.content == z.read(inside)
    part = served.get(url, headers={"Range": "bytes=10-99"})
    assert part.status_code == 206 and part.content == whole.content[10:100]
