"""The New page offers every field of the request (its controls made from the form's schema, which the
request model makes), so a person reaches the proof pass, the read-along, word timings, the cast and the
job's numbers without the command line; a refused form shows every value again. A real browser against a
real server and worker on the tiny random checkpoint."""

from __future__ import annotations

import re

import pytest
from helpers.chromium import SKIP_REASON, find_chromium
from helpers.procs import wait_until
from helpers.web import served_with_worker
from narrate.jobs.web.submitting import FIELDS

pytestmark = pytest.mark.skipif(find_chromium() is None, reason=SKIP_REASON)

TEXT = "Chapter One\n\nThe first line is here. The second one follows.\n\nChapter Two\n\nAnd the last line ends it."
ONLY_FOR_PROGRAMS = {"callback_url"}  # a program's (the API's), not a person's
AFTER_A_FILE = {"chapters"}  # a chosen file's chapters, ticked (tests/system/test_serve_pages.py)


@pytest.fixture(scope="module")
def served(checkpoint):
    yield from served_with_worker(checkpoint)


def test_every_field_of_the_request_has_a_control(served, page):
    page.goto(served.url + "/new")
    names = page.eval_on_selector_all("form#new [name]", "els => els.map(e => e.name)")
    assert set(names) == set(FIELDS) - ONLY_FOR_PROGRAMS - AFTER_A_FILE, set(FIELDS) ^ set(names)
    once = [n for n in names if FIELDS[n].get("type") != "array"]
    assert len(once) == len(set(once)), sorted(n for n in once if once.count(n) > 1)
    assert page.locator("#retakes").get_attribute("max") == "5"  # the model's bounds reach the control
    quants = page.eval_on_selector_all("#quant option", "els => els.map(e => e.textContent)")
    assert quants == ["default", "bf16", "4bit", "6bit", "8bit", "float32"]


def test_a_person_asks_for_a_read_along_manifest_and_a_seed_on_the_page(served, page, voice_wav):
    page.goto(served.url + "/new")
    page.fill("#text", TEXT)
    page.set_input_files("#voice_sample", str(voice_wav))
    page.fill("#readalong", "manifest")
    page.click("#more-options summary")
    page.fill("#seed", "7")
    page.fill("#sentence_pause_ms", "100")
    page.click("form#new button.primary")
    page.wait_for_url(re.compile(r"/jobs/narrate-[0-9a-f]+"))
    job_id = re.search(r"/jobs/(narrate-[0-9a-f]+)", page.url).group(1)
    wait_until(lambda: served.get(f"/v1/narrations/{job_id}").json()["status"] == "completed", 120, "the book")
    files = [f["name"] for f in served.get(f"/v1/narrations/{job_id}").json()["outputs"]]
    assert any(name.endswith(".audiobook.json") for name in files), files  # the read-along manifest beside it


def test_a_refused_form_shows_every_value_again_and_names_the_field(served, page, voice_wav):
    before = served.get("/v1/narrations").json()["data"]
    page.goto(served.url + "/new")
    page.fill("#text", TEXT)
    page.set_input_files("#voice_sample", str(voice_wav))
    page.fill("#readalong", "manifest")
    page.select_option("#split", "chapters")
    page.click("#more-options summary")
    page.fill("#seed", "7")
    page.fill("#cast_voice-0", "alice=nobody-saved")
    page.click("form#new button.primary")
    assert "readalong: a read-along book plays the whole book's file" in page.inner_text(".error")
    assert page.input_value("#readalong") == "manifest" and page.input_value("#seed") == "7"
    assert page.input_value("#cast_voice-0") == "alice=nobody-saved" and page.input_value("#text") == TEXT
    assert served.get("/v1/narrations").json()["data"] == before  # nothing enqueued
