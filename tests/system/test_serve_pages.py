"""`narrate serve`'s pages in a real browser (Playwright driving the installed Chromium), against a
real server, worker and embedded Valkey on the tiny random checkpoint: a text and a sample
submitted on the New page become a job whose progress rises live, survives a reload and shows in a
second browser, finishes, and downloads as an m4b that decodes with its duration and chapters; the
Books page plays and deletes it; the Queue page cancels a running job and moves a queued one to
high priority; the Voices page adds, previews, renames and removes a voice; a key-protected server
sends a browser to its login form; a page on another origin changes nothing; a phone-sized
viewport never scrolls sideways."""

from __future__ import annotations

import re
import subprocess
import time

import pytest
import requests
from helpers.audio import decoded_samples
from helpers.chromium import SKIP_REASON, find_chromium, launch_args, serve_directory
from helpers.procs import wait_until
from helpers.servers import free_port
from helpers.web import Served, remove_home, serve_env, served_with_worker, start_serve, stop, wait_serving

pytestmark = pytest.mark.skipif(find_chromium() is None, reason=SKIP_REASON)
SENTENCES = 36
TEXT = "Chapter One\n\n" + " ".join(f"This is sentence number {i} of the first part." for i in range(SENTENCES // 2))
TEXT += "\n\nChapter Two\n\n" + " ".join(f"Here is line {i} of the second part." for i in range(SENTENCES // 2))
TOTAL = SENTENCES + 2  # and the two headings
LONG = " ".join(f"A long book says sentence {i} here." for i in range(400))
KEY = "a-long-random-key-for-the-pages-0123"


@pytest.fixture(scope="module")
def served(checkpoint):
    yield from served_with_worker(checkpoint)


def submit_text(served: Served, text: str, voice_wav, **fields: str) -> str:
    with open(voice_wav, "rb") as f:
        made = served.post("/v1/narrations", data={"text": text, **fields}, files={"voice_sample": f})
    assert made.status_code == 202, made.text
    return made.json()["id"]


def api_status(served: Served, job_id: str) -> dict:
    return served.get(f"/v1/narrations/{job_id}").json()


def png(width: int = 2, height: int = 2) -> bytes:
    """A real (decodable) PNG of red pixels."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + b"\xff\0\0" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def chapter_titles(path) -> list[str]:
    import imageio_ffmpeg

    meta = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(path), "-f", "ffmetadata", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    chapters = meta.split("[CHAPTER]")[1:]
    return [line.split("=", 1)[1] for c in chapters for line in c.splitlines() if line.startswith("title=")]


def test_a_text_and_a_sample_become_a_book_that_downloads_plays_and_deletes(served, page, browser, voice_wav, tmp_path):
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.goto(served.url + "/new")
    page.fill("#text", TEXT)
    page.set_input_files("#voice_sample", str(voice_wav))
    page.select_option("#format", "m4b")
    cover = tmp_path / "cover.png"
    cover.write_bytes(png(3, 2))
    page.set_input_files("#cover", str(cover))
    page.click("form#new button.primary")
    page.wait_for_url(re.compile(r"/jobs/narrate-[0-9a-f]+"))
    job_id = re.search(r"/jobs/(narrate-[0-9a-f]+)", page.url).group(1)
    assert page.inner_text(".notice") == "submitted"

    seen: list[int] = []  # the figures the server-sent events write into the page, until it reloads at the end
    others_saw = False
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        try:
            if page.locator(".status.completed").count():
                break
            seen.append(int(page.inner_text("[data-field=done]", timeout=2000)))
        except Exception:  # noqa: BLE001 - the page reloads itself when the job ends
            continue
        if not others_saw and 0 < seen[-1] < TOTAL:
            # mid-job: each chapter's sentences done, live; a reload keeps the row, another browser sees it
            running = served.get(f"/v1/narrations/{job_id}").json()
            if running["status"] == "in_progress":
                per = running["progress"]["chapters"]
                assert [(c["title"], c["sentences_total"]) for c in per] == [("Chapter One", 19), ("Chapter Two", 19)]
                assert sum(c["sentences_done"] for c in per) <= running["progress"]["sentences_done"] + 1
                listed = page.locator("ol[data-field-chapters] li").all_inner_texts()
                assert len(listed) == 2 and all(t.endswith(" / 19") for t in listed), listed
            again = page.context.new_page()
            again.goto(served.url + "/queue")
            again.reload()
            row = again.locator(f"article.job[data-id='{job_id}']")
            assert row.count() == 1 and row.get_attribute("data-status") in ("in_progress", "completed")
            again.close()
            other = browser.new_context()
            elsewhere = other.new_page()
            elsewhere.goto(served.url + "/queue")
            assert elsewhere.locator(f"article.job[data-id='{job_id}']").count() == 1
            other.close()
            others_saw = True
        time.sleep(0.2)
    page.locator(".status.completed").wait_for(timeout=5000)
    rising = [n for n in seen if 0 < n < TOTAL]
    assert others_saw and len(set(rising)) >= 2 and rising == sorted(rising), seen  # progress rose, live
    assert page.inner_text("[data-field=done]") == str(TOTAL)

    job = api_status(served, job_id)
    [book] = [f for f in job["outputs"] if f["name"].endswith(".m4b")]
    with page.expect_download() as got:
        page.click(f"ul.downloads a[href='{book['url']}']")
    saved = tmp_path / "book.m4b"
    got.value.save_as(saved)
    assert len(decoded_samples(saved)) / 24000 == pytest.approx(job["duration_s"], abs=0.1)
    titles = [c["title"] for c in job["progress"]["chapters"]]
    assert titles == ["Chapter One", "Chapter Two"] and chapter_titles(saved) == titles
    assert page.locator("ol.chapters li").all_inner_texts()[1].endswith("Chapter Two")

    page.goto(served.url + "/books")
    card = page.locator(f"article.book[data-id='{job_id}']")
    page.wait_for_function(
        f"(document.querySelector(\"article.book[data-id='{job_id}'] img.cover\") || {{}}).naturalWidth === 3"
    )
    card.locator("summary", has_text="chapters").click()
    second = job["progress"]["chapters"][1]["start_s"]
    card.locator("ol.chapters button").nth(1).click()
    at = page.evaluate(f"document.querySelector(\"article.book[data-id='{job_id}'] audio\").currentTime")
    assert at == pytest.approx(second, abs=0.5)
    card.locator("summary", has_text="Delete").click()
    card.locator("input[name=confirm]").check()
    with page.expect_navigation():
        card.locator("button.danger").click()
    assert page.url == served.url + "/queue" and page.inner_text(".notice").startswith("deleted")  # never in the URL
    assert served.get(f"/v1/narrations/{job_id}").status_code == 404
    assert served.get(book["url"]).status_code == 404
    assert not [m for m in console if m.startswith("error")], console  # no CSP refusals, no script errors


def test_choosing_a_file_lists_its_chapters_and_an_unticked_one_is_left_out(served, page, voice_wav, tmp_path):
    book = tmp_path / "three.md"
    book.write_text("# Dawn\n\nThe sun rose.\n\n# Noon\n\nIt was hot.\n\n# Dusk\n\nThe sun set. Birds slept.\n")
    page.goto(served.url + "/new")
    page.set_input_files("#file", str(book))
    boxes = page.locator("input[name=chapters]")
    boxes.nth(2).wait_for()  # htmx swapped in what the file holds
    assert page.locator(".inspected legend").inner_text() == "three.md"
    assert page.inner_text("#first-sentence") == "Dawn"
    assert [b.is_checked() for b in boxes.all()] == [True, True, True]
    boxes.nth(1).uncheck()
    page.set_input_files("#voice_sample", str(voice_wav))
    page.click("form#new button.primary")
    page.wait_for_url(re.compile(r"/jobs/narrate-[0-9a-f]+"))
    job_id = re.search(r"/jobs/(narrate-[0-9a-f]+)", page.url).group(1)
    wait_until(lambda: api_status(served, job_id)["status"] == "completed", 120, "the job to finish")
    job = api_status(served, job_id)
    assert [c["title"] for c in job["progress"]["chapters"]] == ["Dawn", "Dusk"]
    assert job["progress"]["sentences_total"] == 5  # Dawn, The sun rose. | Dusk, The sun set. Birds slept.


def test_an_epubs_own_title_author_and_series_fill_the_new_page(served, page, tmp_path):
    from helpers.books import write_epub

    book = tmp_path / "odyssey.epub"
    write_epub(book)
    page.goto(served.url + "/new")
    page.set_input_files("#file", str(book))
    page.locator("input[name=chapters]").nth(1).wait_for()
    assert page.input_value("#title") == "The Odyssey" and page.input_value("#author") == "Homer"
    assert page.input_value("#series") == "Greek Classics #2"


def test_the_queue_page_moves_a_queued_job_up_and_cancels_a_running_one(served, page, voice_wav):
    running = submit_text(served, LONG, voice_wav)
    waiting = submit_text(served, "A short one waits its turn.", voice_wav)
    wait_until(lambda: api_status(served, running)["status"] == "in_progress", 60, "the long job to start")
    page.goto(served.url + "/queue")
    row = page.locator(f"article.job[data-id='{waiting}']")
    row.locator("select[name=priority]").select_option("high")
    with page.expect_navigation():
        row.locator("button", has_text="Set priority").click()
    assert "moved to high priority" in page.inner_text(".notice")
    assert api_status(served, waiting)["priority"] == "high"

    with page.expect_navigation():
        page.locator(f"article.job[data-id='{running}'] button", has_text="Cancel").click()
    page.locator(f"article.job[data-id='{running}'][data-status='cancelled']").wait_for(timeout=30_000)  # polled rows
    assert page.locator(f"article.job[data-id='{running}'] button", has_text="Resume").count() == 1
    wait_until(lambda: api_status(served, waiting)["status"] == "completed", 120, "the moved job to run")


def test_the_voices_page_adds_previews_renames_and_removes_a_voice(served, page, voice_wav):
    page.goto(served.url + "/voices")
    page.fill("#name", "page-voice")
    page.set_input_files("#audio_sample", str(voice_wav))
    page.fill("#description", "added on the page")
    page.click("form[action='/voices/add'] button")  # the consent box is not ticked: the browser refuses
    assert page.url.endswith("/voices") and not page.locator(".notice").count()
    page.check("#consent")
    with page.expect_navigation():
        page.click("form[action='/voices/add'] button")
    assert page.inner_text(".notice") == "saved voice page-voice"
    card = page.locator("article.voice[data-name='page-voice']")
    card.locator("button[data-preview]").click()
    page.wait_for_function(
        "() => { const a = document.querySelector(\"article.voice[data-name='page-voice'] audio\");"
        " return a.src.startsWith('blob:') && a.duration > 0; }",
        timeout=120_000,
    )
    card.locator("summary").click()
    card.locator("input[name=new_name]").fill("renamed-voice")
    with page.expect_navigation():
        card.locator("button", has_text="Rename").click()
    card = page.locator("article.voice[data-name='renamed-voice']")
    card.locator("summary").click()
    with page.expect_navigation():
        card.locator("button", has_text="Remove").click()
    assert page.inner_text(".notice") == "removed voice renamed-voice"
    assert "renamed-voice" not in [v["id"] for v in served.get("/v1/audio/voices").json()["voices"]]


def test_a_server_with_a_key_sends_a_browser_to_its_login_form(checkpoint, browser):
    env, home = serve_env(checkpoint, NARRATE_API_KEY=KEY)
    port = free_port()
    proc = start_serve(env, port, "--bind", "0.0.0.0")  # off loopback: the key is required
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(proc, url)
        assert requests.get(f"{url}/v1/narrations", timeout=10).status_code == 401
        assert requests.get(f"{url}/v1/narrations", headers={"Authorization": f"Bearer {KEY}"}, timeout=10).ok
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{url}/voices")
        assert re.search(r"/login\?next=/voices$", page.url), page.url
        assert page.locator("text=Sign out").count() == 0  # nothing to sign out of yet
        page.fill("#key", "not-the-key")
        page.click("button.primary")
        assert "not the server's key" in page.inner_text(".error")
        page.fill("#key", KEY)
        page.click("button.primary")
        page.wait_for_url(f"{url}/voices")
        [cookie] = context.cookies()
        assert cookie["name"] == "narrate_session" and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert KEY not in cookie["value"]
        assert page.evaluate("document.cookie") == ""  # HttpOnly: the page's script cannot read it
        page.goto(f"{url}/queue")
        assert page.locator("h1").inner_text() == "Queue"
        page.click("text=Sign out")
        page.wait_for_url(re.compile(r"/login"))
        page.goto(f"{url}/queue")
        assert "/login" in page.url
        context.close()
    finally:
        stop(proc)
        remove_home(home)


def test_a_page_on_another_origin_changes_nothing(served, browser_type, voice_wav, tmp_path):
    later = submit_text(served, "This one waits an hour.", voice_wav, **{"in": "1h"})
    evil_port = free_port()
    site = tmp_path / "evil"
    site.mkdir()
    (site / "attack.html").write_text(f"""<!doctype html><title>cute cats</title>
<form id="f" method="POST" action="{served.url}/jobs/{later}/cancel"></form>
<script>
const post = (path, body) => fetch("{served.url}" + path,
                                  {{method: "POST", mode: "no-cors", credentials: "include", body}});
Promise.allSettled([post("/v1/narrations/{later}/cancel"),
                    post("/jobs/{later}/priority", new URLSearchParams("priority=high")),
                    post("/voices/design", new URLSearchParams("name=evil&description=evil"))])
  .then(() => setTimeout(() => document.getElementById("f").submit(), 300));
</script>""")
    server = serve_directory(site, evil_port)
    browser = browser_type.launch(**launch_args(host_rules="MAP evil.example 127.0.0.1"))
    try:
        wait_until(lambda: _answers(evil_port), 15, "the other site", poll=0.1)
        page = browser.new_page()
        page.goto(f"http://evil.example:{evil_port}/attack.html")
        page.wait_for_url(f"{served.url}/jobs/{later}/cancel")
        assert "cross-site" in page.inner_text("body")
        time.sleep(0.5)
    finally:
        browser.close()
        server.terminate()
        server.wait()
    job = api_status(served, later)
    assert job["status"] == "scheduled" and job["priority"] == "normal"
    assert "evil" not in served.get("/voices").text


def _answers(port: int) -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{port}/", timeout=2).ok
    except requests.RequestException:
        return False


def test_a_phone_sized_screen_never_scrolls_sideways(served, browser, voice_wav):
    job_id = submit_text(
        served, "A phone reads this. " + "Averyveryverylongwordwithoutanybreaks" * 6, voice_wav, **{"in": "1h"}
    )
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    for path in ("/new", "/queue", "/books", "/voices", f"/jobs/{job_id}"):
        page.goto(served.url + path)
        page.wait_for_load_state("load")
        wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 0, f"{path} scrolls sideways by {wide} px"
    context.close()


def test_markup_in_a_document_name_is_shown_as_text_and_runs_nothing(served, page, voice_wav):
    evil = "<img src=x onerror=\"document.title='pwned'\">.txt"
    with open(voice_wav, "rb") as f:
        made = served.post(
            "/v1/narrations", files={"file": (evil, b"Hello there."), "voice_sample": f}, data={"in": "1h"}
        )
    assert made.status_code == 202, made.text
    job_id = made.json()["id"]
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    for path in ("/queue", f"/jobs/{job_id}"):
        page.goto(served.url + path)
        page.wait_for_load_state("load")
        time.sleep(0.3)
        assert page.title() != "pwned" and page.locator("img[src=x]").count() == 0
        assert "<img src=x" in page.inner_text("main")  # shown as the text it is
    assert errors == []
