"""What a walk through `narrate serve`'s pages from a fresh clone tripped on, in a real browser
(Playwright driving the installed Chromium) against a real server, worker and embedded Valkey on
the tiny random checkpoints, with the hub out of reach (HF_HUB_OFFLINE=1): no page logs a console
error and a bad voice name is refused by the browser; the Job page's badge takes the colour of each
state it reaches live; the Queue and Job pages show one ETA, alike, and none once a job ended; the
Queue lists what runs first; a preview plays in its voice's card; titles, not file names, name the
books and their downloads; text from a query string is never shown; the pages offer the server's
models, and a voice designed on the page with a local VoiceDesign checkpoint needs no hub."""

from __future__ import annotations

import os
import re
import signal
import time
from contextlib import contextmanager
from datetime import datetime
from urllib.parse import unquote

import pytest
import requests
from helpers.books import write_epub
from helpers.chromium import SKIP_REASON, find_chromium
from helpers.procs import child_pid, wait_until
from helpers.servers import free_port
from helpers.web import Served, remove_home, serve, serve_env, start_serve, stop, wait_serving
from narrate.jobs.humanize import duration

pytestmark = pytest.mark.skipif(find_chromium() is None, reason=SKIP_REASON)
LONG = " ".join(f"A long book says sentence {i} here." for i in range(400))
MIDDLE = " ".join(f"This one waits and then reads line {i}." for i in range(60))
KEY = "a-long-random-key-for-the-pages-0123"
PHISH = "Call 0800 123 456 now to keep your account"


@pytest.fixture(scope="module")
def served(checkpoint):
    s = serve(checkpoint, HF_HUB_OFFLINE="1").with_worker()
    yield s
    logs = s.close()
    assert "Traceback" not in logs, logs[-4000:]


def submit(served: Served, voice_wav, text: str | None = None, files: dict | None = None, **fields: str) -> str:
    with open(voice_wav, "rb") as f:
        made = served.post(
            "/v1/narrations",
            data={**({"text": text} if text else {}), **fields},
            files={**(files or {}), "voice_sample": f},
        )
    assert made.status_code == 202, made.text
    return made.json()["id"]


def status(served: Served, job_id: str) -> dict:
    return served.get(f"/v1/narrations/{job_id}").json()


def until(served: Served, job_id: str, *states: str, timeout: float = 120) -> dict:
    wait_until(lambda: status(served, job_id)["status"] in states, timeout, f"{job_id} to be {'/'.join(states)}")
    return status(served, job_id)


def console_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def test_no_page_logs_a_console_error_and_the_browser_refuses_a_bad_voice_name(served, page, checkpoint, voice_wav):
    job_id = submit(served, voice_wav, "A page to look at, an hour from now.", **{"in": "1h"})
    errors = console_errors(page)
    for path in ("/queue", "/new", f"/jobs/{job_id}", "/books", "/voices"):
        page.goto(served.url + path)
        page.wait_for_load_state("load")
        time.sleep(0.3)
        assert errors == [], f"{path}: {errors}"
    for field in ("#name", "#design-name"):
        page.fill(field, "bad name!")
        assert page.evaluate(f"document.querySelector('{field}').validity.patternMismatch"), field
        page.fill(field, "Good-name_2")
        assert page.evaluate(f"document.querySelector('{field}').validity.valid"), field
    page.fill("#name", "no spaces allowed")
    page.set_input_files("#audio_sample", str(voice_wav))
    page.check("#consent")
    page.click("form[action='/voices/add'] button")  # the browser refuses it: nothing is sent
    time.sleep(0.5)
    assert page.url == served.url + "/voices" and not page.locator(".notice, .error").count()
    assert "no-spaces-allowed" not in served.get("/v1/audio/voices").text
    assert errors == [], errors  # checking the fields compiled their pattern without a word

    env, home = serve_env(checkpoint, NARRATE_API_KEY=KEY)
    port = free_port()
    proc = start_serve(env, port, "--bind", "0.0.0.0")
    try:
        wait_serving(proc, f"http://127.0.0.1:{port}")
        page.goto(f"http://127.0.0.1:{port}/login")
        page.wait_for_load_state("load")
        time.sleep(0.3)
        assert page.locator("#key").count() == 1 and errors == [], errors
    finally:
        stop(proc)
        remove_home(home)


BADGE = "document.querySelector('[data-field=status]')"


def test_the_job_pages_badge_takes_each_states_colour_live(served, page, voice_wav):
    running = submit(served, voice_wav, LONG)
    until(served, running, "in_progress", timeout=60)
    waiting = submit(served, voice_wav, MIDDLE)
    page.goto(f"{served.url}/jobs/{waiting}")
    assert page.get_attribute("[data-field=status]", "class") == "status queued"
    queued_colour = page.evaluate(f"getComputedStyle({BADGE}).color")
    page.evaluate("window.notReloaded = true")
    assert served.post(f"/v1/narrations/{running}/cancel").ok
    page.wait_for_function(
        f"() => {BADGE}.className === 'status in_progress' && {BADGE}.textContent === 'in progress'"
        " && window.notReloaded === true",
        timeout=60_000,
    )
    assert page.evaluate(f"getComputedStyle({BADGE}).color") != queued_colour
    page.locator("[data-field=status].completed").wait_for(timeout=120_000)  # the page reloads at the end
    assert page.inner_text("[data-field=status]") == "completed"


@contextmanager
def paused(served: Served):
    """The worker's job process stopped (SIGSTOP) for a moment: its figures hold still."""
    assert served.worker is not None
    found = child_pid(served.home, served.worker)
    pid = found[1] if found else served.worker.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(1.0)  # what it wrote before the stop has reached Redis
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.mark.parametrize("fan_out", ["none", "chapters"])  # one job; a book read in parts (its ETA is theirs)
def test_the_queue_and_job_pages_show_one_eta_and_none_once_a_job_ended(served, page, browser, voice_wav, fan_out):
    text = LONG if fan_out == "none" else f"Chapter One\n\n{LONG}\n\nChapter Two\n\n{LONG}"
    job_id = submit(served, voice_wav, text, fan_out=fan_out)
    wait_until(lambda: status(served, job_id)["progress"]["eta_s"] is not None, 90, "an ETA")
    queue = browser.new_page()
    with paused(served):
        page.goto(f"{served.url}/jobs/{job_id}")
        queue.goto(f"{served.url}/queue")
        page.wait_for_function("() => document.querySelector('[data-field=eta]').textContent.startsWith('ETA')")
        time.sleep(1.0)  # the event stream's first event is in
        said = status(served, job_id)
        want = f"ETA {duration(said['progress']['eta_s'], spelled=True)}"
        on_job = page.inner_text("[data-field=eta]")
        on_queue = queue.inner_text(f"article.job[data-id='{job_id}'] .eta")
    spelled = r"ETA (\d+ s|\d+ min \d\d s|\d+ h \d\d min)"
    if fan_out == "none":
        assert on_job == on_queue == want, (on_job, on_queue, want)
    else:  # the parts' ETA grows with the wall clock while none is done (paused): the same spelling, from one source
        assert re.fullmatch(spelled, on_job) and re.fullmatch(spelled, on_queue), (on_job, on_queue)
    assert re.fullmatch(spelled, want)
    values = [0, 0.5, 1.5, 2.5, 59.4, 59.5, 77, 3599.4, 3600, 7625.5]  # the script spells them as the server
    assert page.evaluate("values => values.map(spelled)", values) == [duration(v, spelled=True) for v in values]

    assert served.post(f"/v1/narrations/{job_id}/cancel").ok
    until(served, job_id, "cancelled")
    # A published model the worker cannot have: it runs offline (HF_HUB_OFFLINE), so the job fails.
    failed = submit(served, voice_wav, "No hub, no model.", model="mlx-community/Qwen3-TTS-12Hz-0.6B-Base-4bit")
    assert until(served, failed, "failed")["progress"]["realtime_factor"] is None
    done = submit(served, voice_wav, "A short one ends well.")
    until(served, done, "completed")
    queue.goto(f"{served.url}/queue")
    for ended in (job_id, failed, done):
        page.goto(f"{served.url}/jobs/{ended}")
        shown = page.inner_text(".figures")
        assert "ETA" not in shown and "–" not in shown, (ended, shown)
        row = queue.inner_text(f"article.job[data-id='{ended}'] .figures")
        assert "ETA" not in row, (ended, row)
    page.goto(f"{served.url}/jobs/{failed}")
    assert "realtime" not in page.inner_text(".figures")
    queue.close()


def test_the_queue_lists_what_runs_first_then_what_waits_then_the_scheduled_then_the_ended(served, voice_wav):
    running = submit(served, voice_wav, LONG)
    until(served, running, "in_progress", timeout=60)
    normal = submit(served, voice_wav, "A normal one waits.")
    high = submit(served, voice_wav, "A high one goes first.", priority="high")
    sooner = submit(served, voice_wav, "Due in an hour.", **{"in": "1h"})
    later = submit(served, voice_wav, "Due in two hours.", **{"in": "2h"})
    html = served.get("/queue").text
    rows = re.findall(r'<article class="card job" data-id="([^"]+)" data-status="([^"]+)"', html)
    order = [job_id for job_id, _ in rows]
    rank = {"in_progress": 0, "queued": 1, "scheduled": 2}
    ranks = [rank.get(state, 3) for _, state in rows]
    assert ranks == sorted(ranks), rows
    assert order[0] == running
    assert order.index(high) < order.index(normal) and order.index(sooner) < order.index(later)
    ended = [j for j, state in rows if rank.get(state, 3) == 3]
    created = [status(served, j)["created_at"] for j in ended]
    assert created == sorted(created, reverse=True)  # the ended ones newest first
    assert served.get("/queue/rows").text.count("<article") == len(rows)
    for job_id in (running, normal, high, sooner, later):
        served.post(f"/v1/narrations/{job_id}/cancel")


def test_a_preview_plays_in_the_card_of_the_voice_it_previews(served, page, voice_wav):
    for name in ("first-voice", "second-voice"):
        with open(voice_wav, "rb") as f:
            assert served.post("/v1/audio/voices", files={"audio_sample": f}, data={"name": name, "consent": "1"}).ok
    page.goto(served.url + "/voices")
    card = page.locator("article.voice[data-name='second-voice']")
    card.locator("button[data-preview]").click()
    in_card = "document.querySelector(\"article.voice[data-name='second-voice'] audio\")"
    page.wait_for_function(
        f"() => {{ const a = {in_card}; return a && a.src.startsWith('blob:') && a.duration > 0 && !a.hidden; }}",
        timeout=120_000,
    )
    playing = page.evaluate(
        "[...document.querySelectorAll('audio')].filter(a => a.src.startsWith('blob:'))"
        ".map(a => (a.closest('article.voice') || {dataset: {}}).dataset.name)"
    )
    assert playing == ["second-voice"]


def test_titles_not_file_names_name_the_books_and_their_downloads(served, page, voice_wav, tmp_path):
    with open(voice_wav, "rb") as f:
        assert served.post("/v1/audio/voices", files={"audio_sample": f}, data={"name": "reader", "consent": "1"}).ok
    book = tmp_path / "odyssey.epub"
    write_epub(book, title="The Odyssey: Book One")
    with open(book, "rb") as f:
        made = served.post("/v1/narrations", files={"file": ("odyssey.epub", f)}, data={"voice": "reader"})
    assert made.status_code == 202, made.text
    epub_id = made.json()["id"]
    text_id = submit(served, voice_wav, files={"file": ("art2.txt", b"A short article. It ends here.")}, format="m4b")
    for job_id in (epub_id, text_id):
        until(served, job_id, "completed", timeout=240)
    queue = served.get("/queue").text
    assert "The Odyssey: Book One</a>" in queue and ">art2</a>" in queue and "odyssey.epub" not in queue
    page.goto(f"{served.url}/jobs/{epub_id}")
    assert page.inner_text("h1") == "The Odyssey: Book One"
    assert page.locator("ul.downloads a").first.inner_text() == "The Odyssey Book One.mp3"
    page.goto(f"{served.url}/books")
    card = page.locator(f"article.book[data-id='{epub_id}']")
    assert card.locator("a.title").inner_text() == "The Odyssey: Book One"
    assert card.locator(".day").inner_text() == datetime.now().astimezone().strftime("%Y-%m-%d")
    assert card.locator(".voice").inner_text() == "voice: reader"
    assert card.locator(".format").inner_text() == "MP3"
    other = page.locator(f"article.book[data-id='{text_id}']")
    assert other.locator("a.title").inner_text() == "art2" and other.locator(".format").inner_text() == "M4B"
    for job_id, want in ((epub_id, "The Odyssey Book One.mp3"), (text_id, "art2.m4b")):
        [main] = [f for f in status(served, job_id)["outputs"] if f["name"].endswith((".mp3", ".m4b"))]
        got = served.get(main["url"])
        assert got.ok and saved_as(got.headers["content-disposition"]) == want, got.headers
    with page.expect_download() as saved:
        card.locator("a.button", has_text=".mp3").click()
    assert saved.value.suggested_filename == "The Odyssey Book One.mp3"


def saved_as(disposition: str) -> str:
    """The file name a Content-Disposition header gives (RFC 6266: filename*, else filename)."""
    encoded = re.search(r"filename\*=utf-8''([^;]+)", disposition, re.IGNORECASE)
    if encoded:
        return unquote(encoded.group(1))
    plain = re.search(r'filename="([^"]*)"', disposition)
    assert plain, disposition
    return plain.group(1)


def test_text_from_a_query_string_is_never_shown_on_a_page(served, voice_wav):
    job_id = submit(served, voice_wav, "A job with a page.", **{"in": "1h"})
    query = {"error": PHISH, "said": PHISH, "message": PHISH}
    for path in (
        "/queue",
        "/new",
        f"/jobs/{job_id}",
        "/books",
        "/voices",
        "/voices/designs/nothing",
        f"/jobs/narrate-{PHISH}",
        "/queue/rows",
    ):
        got = served.get(path, params=query)
        assert "0800" not in got.text, path
    # What an action says still shows, once, on the page it leads to (and never in its URL).
    browser_like = requests.Session()
    answer = browser_like.post(
        served.url + "/voices/add", files={"name": (None, "someone")}, allow_redirects=False, timeout=30
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/voices", answer.headers
    shown = browser_like.get(served.url + answer.headers["location"], timeout=30).text
    assert "tick the consent box" in shown
    assert "tick the consent box" not in browser_like.get(served.url + "/voices", timeout=30).text


def test_the_pages_offer_the_servers_model_and_a_hub_design_offline_says_how_to_make_one(served, page, checkpoint):
    page.goto(served.url + "/new")
    assert page.input_value("#model") == str(checkpoint)
    page.goto(served.url + "/voices")
    page.fill("#design-name", "hub-design")
    page.fill("#design-description", "Female, 60s, low raspy alto")
    page.fill("#candidates", "1")
    page.click("form[action='/voices/design'] button")
    page.wait_for_url(re.compile(r"/voices/designs/hub-design$"))
    page.locator("p.error").wait_for(timeout=120_000)  # no VoiceDesign checkpoint here, and the hub is offline
    said = page.inner_text("p.error")
    assert "--kind voice-design" in said and "HF_HUB_OFFLINE" in said, said


def test_a_voice_designed_on_the_page_with_the_servers_local_checkpoint_needs_no_hub(voice_design_checkpoint, page):
    s = serve(voice_design_checkpoint, HF_HUB_OFFLINE="1", NARRATE_MAX_FRAMES="20").with_worker()
    try:
        page.goto(s.url + "/voices")
        assert page.input_value("#design-model") == str(voice_design_checkpoint)
        page.fill("#design-name", "gran")
        page.fill("#design-description", "Female, 60s, low raspy alto, unhurried")
        page.fill("#candidates", "2")
        page.click("form[action='/voices/design'] button")
        page.wait_for_url(re.compile(r"/voices/designs/gran$"))
        assert "designing" in page.inner_text(".notice")
        page.locator("input[name=number]").nth(1).wait_for(timeout=180_000)  # the candidates came
        assert not page.locator("p.error").count()
        page.locator("input[name=number]").first.check()
        page.click("button.primary")
        page.wait_for_url(re.compile(r"/voices$"))
        assert page.inner_text(".notice") == "kept candidate 1 as voice gran"
    finally:
        logs = s.close()
    assert "Traceback" not in logs, logs[-4000:]
