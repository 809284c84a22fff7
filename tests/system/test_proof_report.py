"""The proof pass's report of a finished narration, on a real server and fake-engine worker whose fake recognizer
hears defects on request (worker/testkit/fake_recognizer.py): `narrate proof` (text, --json, --csv) and `narrate
status`, `GET /v1/narrations/{id}/proof` (404 for no narration, 409 for one without proof), and the Job page in
Chromium: the flagged sentences, each with a player of its stretch of the book file (from its start, stopping at
its end) and a link to it in the read-along, on a desktop screen and on a phone's."""

from __future__ import annotations

import csv
import io
import json

import pytest
from helpers.chromium import SKIP_REASON, find_chromium
from helpers.procs import narrate, wait_until
from helpers.web import Served, serve
from narrate.jobs.proof.takes import retake_seed

BOOK = (
    "# The Harbor\n\nShips came in at dawn. The gulls were loud. A bell rang twice.\n\n"
    "# The Storm\n\nRain hammered the glass all night. Nobody slept. By morning the sea was calm.\n"
)
# Sentence 2 is heard with a word dropped in all three takes (kept flagged); sentence 5 with words said twice in
# its first take only (fixed by its first retake).
FLAWS = "gulls were=drop,drop,drop;Rain hammered=repeat"
STILL, FIXED = 2, 5
browser_only = pytest.mark.skipif(find_chromium() is None, reason=SKIP_REASON)


@pytest.fixture(scope="module")
def served(checkpoint):
    s = serve(
        checkpoint,
        NARRATE_ENGINE="fake",
        NARRATE_FAKE_DELAY_MS="5",
        NARRATE_FAKE_PROOF_FLAW=FLAWS,
        NARRATE_PROOF_RATE_FACTOR="1000",
    ).with_worker()
    yield s
    logs = s.close()
    assert "Traceback" not in logs, logs[-4000:]


def narrated(served: Served, voice_wav, text: str, **fields: str) -> dict:
    with open(voice_wav, "rb") as f:
        made = served.post("/v1/narrations", data={"text": text, "format": "mp3", **fields}, files={"voice_sample": f})
    assert made.status_code == 202, made.text
    job_id = made.json()["id"]
    wait_until(lambda: served.get(f"/v1/narrations/{job_id}").json()["status"] == "completed", 120, "the narration")
    return served.get(f"/v1/narrations/{job_id}").json()


@pytest.fixture(scope="module")
def proofed(served, voice_wav) -> dict:
    """The narration with proof (and a read-along), and its timing manifest."""
    job = narrated(served, voice_wav, BOOK, proof="auto", retakes="2", subtitles="json")
    [manifest] = [f for f in job["outputs"] if f["name"].endswith(".json")]
    return {"job": job, "timing": served.get(manifest["url"]).json()}


@pytest.fixture(scope="module")
def plain(served, voice_wav) -> dict:
    """A narration without proof."""
    return narrated(served, voice_wav, "Nobody listened to this one.")


def test_the_api_reports_each_flagged_sentence_placed_in_the_book(served, proofed, plain):
    job, timing = proofed["job"], proofed["timing"]
    assert job["proof"] == {
        "model": "mlx-community/parakeet-tdt-0.6b-v2",
        "checked": 8,
        "flagged": 2,
        "retaken": 2,
        "still_flagged": 1,
        "retakes": 3,
        "reasons": {"dropped": 1},
    }
    got = served.get(f"/v1/narrations/{job['id']}/proof")
    assert got.status_code == 200, got.text
    rep = got.json()
    assert rep["object"] == "narration.proof" and rep["status"] == "completed" and rep["complete"]
    assert (rep["checked"], rep["flagged"], rep["fixed"], rep["still_flagged"]) == (8, 2, 1, 1)
    [book] = [f for f in job["outputs"] if f["name"].endswith(".mp3")]
    assert rep["audio_url"] == book["url"] and rep["sentences_left_out"] == 0
    still, fixed = rep["sentences"]
    assert (still["index"], fixed["index"]) == (STILL, FIXED)
    for s in (still, fixed):  # where the timing manifest has it, in its chapter
        placed = timing["sentences"][s["index"]]
        assert s["start_s"] == pytest.approx(placed["start"], abs=0.002)
        assert s["end_s"] == pytest.approx(placed["end"], abs=0.002)
        assert s["text"] == placed["text"] and s["spoken"] == placed["text"]
        seeds = [t["seed"] for t in s["takes"]]
        assert seeds[1:] == [retake_seed(seeds[0], n) for n in range(1, len(seeds))]
    assert (still["chapter"], still["chapter_title"], fixed["chapter"], fixed["chapter_title"]) == (
        1,
        "The Harbor",
        2,
        "The Storm",
    )
    assert still["outcome"] == "still_flagged" and still["reasons"] == ["dropped"] == still["flagged_for"]
    assert still["transcript"] == "The were loud." and still["problem"] == "dropped 'gulls'"
    assert [t["reasons"] for t in still["takes"]] == [["dropped"]] * 3 and still["kept"] == 0
    assert [t["kept"] for t in still["takes"]] == [True, False, False]
    assert fixed["outcome"] == "fixed" and fixed["reasons"] == [] and fixed["flagged_for"] == ["wer", "repeated"]
    assert fixed["transcript"] == "Rain hammered the glass all night." and fixed["kept"] == 1
    assert fixed["problem"] == "fixed by take 2 of 2; take 1: wer 0.33, repeated 'rain hammered'"
    assert [t["ok"] for t in fixed["takes"]] == [False, True]

    missing = served.get("/v1/narrations/narrate-nosuchjob/proof")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "job_not_found"
    assert plain["proof"] is None
    refused = served.get(f"/v1/narrations/{plain['id']}/proof")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "not_proofed", refused.text


def test_narrate_proof_lists_them_as_text_json_and_csv(served, proofed, plain):
    job_id = proofed["job"]["id"]
    api = served.get(f"/v1/narrations/{job_id}/proof").json()
    text = narrate(served.env, "proof", job_id)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == (
        f"{job_id}: finished; proof: 8 checked, 2 flagged, 2 retaken (3 retakes), 1 fixed, "
        "1 still flagged (dropped 1) by mlx-community/parakeet-tdt-0.6b-v2"
    )
    block = lines[lines.index("") + 1 :]
    still = api["sentences"][0]
    assert block[0].startswith(f"still flagged: sentence {STILL + 1}, chapter 1 (The Harbor), at 0:0")
    assert block[1:4] == ["  text:   The gulls were loud.", "  heard:  The were loud.", "  wrong:  dropped 'gulls'"]
    assert block[4] == f"  take 1: seed {still['takes'][0]['seed']}, dropped 'gulls'  (kept)"
    assert any(line.startswith(f"fixed: sentence {FIXED + 1}, chapter 2 (The Storm)") for line in lines)

    as_json = narrate(served.env, "proof", job_id, "--json")
    assert as_json.returncode == 0, as_json.stderr
    rep = json.loads(as_json.stdout)
    assert rep["status"] == "finished" and api["audio_url"].endswith("/" + rep["audio"])
    assert rep["sentences"] == api["sentences"] and (rep["fixed"], rep["still_flagged"]) == (1, 1)

    as_csv = narrate(served.env, "proof", job_id, "--csv")
    assert as_csv.returncode == 0, as_csv.stderr
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert [(r["index"], r["chapter"], r["outcome"]) for r in rows] == [
        (str(STILL), "1", "still_flagged"),
        (str(FIXED), "2", "fixed"),
    ]
    assert rows[0]["text"] == "The gulls were loud." and rows[0]["transcript"] == "The were loud."
    assert rows[0]["reasons"] == "dropped" and rows[0]["takes"] == "3" and rows[0]["kept_take"] == "1"
    assert rows[0]["seeds"] == " ".join(str(t["seed"]) for t in still["takes"])
    assert float(rows[1]["start_s"]) == pytest.approx(api["sentences"][1]["start_s"])

    status = narrate(served.env, "status", job_id)
    assert status.returncode == 0, status.stderr
    assert (
        f"proof: 8 checked, 2 flagged, 2 retaken (3 retakes), 1 fixed, 1 still flagged (dropped 1) by "
        f"mlx-community/parakeet-tdt-0.6b-v2; narrate proof {job_id} lists them"
    ) in status.stdout
    st = json.loads(narrate(served.env, "status", job_id, "--json").stdout)
    assert st["result"]["proof"]["sentences"] == api["sentences"]

    missing = narrate(served.env, "proof", "narrate-nosuchjob")
    assert missing.returncode == 1 and "no job 'narrate-nosuchjob'" in missing.stderr
    refused = narrate(served.env, "proof", plain["id"])
    assert refused.returncode == 1 and "was not narrated with --proof" in refused.stderr, refused.stderr
    assert "proof:" not in narrate(served.env, "status", plain["id"]).stdout


def excerpt_state(page, k: int) -> list:
    return page.evaluate(
        "k => { const a = document.querySelectorAll('audio.excerpt')[k]; return [a.currentTime, a.paused]; }", k
    )


@browser_only
def test_the_job_page_lists_them_with_players_and_links_into_the_read_along(served, proofed, page):
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
    job_id = proofed["job"]["id"]
    sentences = served.get(f"/v1/narrations/{job_id}/proof").json()["sentences"]
    page.goto(f"{served.url}/jobs/{job_id}")
    page.wait_for_selector(".readalong[data-ready=true]")
    items = page.locator(".proof-sentence")
    assert items.count() == 2
    assert items.nth(0).locator(".proof-text").inner_text() == "The gulls were loud."
    assert items.nth(0).locator("[data-proof-heard]").inner_text() == "The were loud."
    assert items.nth(0).locator("[data-proof-problem]").inner_text() == "dropped 'gulls'"
    assert "still flagged" in items.nth(0).inner_text() and "chapter 1: The Harbor" in items.nth(0).inner_text()
    assert "fixed" in items.nth(1).locator(".status").inner_text()
    counts = {
        k: page.locator(f"[data-proof-count={k}]").inner_text()
        for k in ("checked", "flagged", "fixed", "still_flagged", "retakes")
    }
    assert counts == {"checked": "8", "flagged": "2", "fixed": "1", "still_flagged": "1", "retakes": "3"}

    # Each player plays its sentence alone: from its start, stopping at its end; again from its start.
    for k, s in enumerate(sentences):
        page.evaluate(
            "k => { const a = document.querySelectorAll('audio.excerpt')[k]; a.muted = true; return a.play(); }", k
        )
        at, paused = excerpt_state(page, k)
        assert s["start_s"] - 0.05 <= at <= s["end_s"], (at, s)
        page.wait_for_function("k => document.querySelectorAll('audio.excerpt')[k].paused", arg=k, timeout=10_000)
        at, _ = excerpt_state(page, k)
        assert at == pytest.approx(s["end_s"], abs=0.15), (at, s)
    page.evaluate("document.querySelectorAll('audio.excerpt')[0].play()")
    at, _ = excerpt_state(page, 0)
    assert at == pytest.approx(sentences[0]["start_s"], abs=0.15)  # played again: from its start
    page.wait_for_function("() => document.querySelectorAll('audio.excerpt')[0].paused", timeout=10_000)

    # Its link: the sentence in the read-along, lit, the book's player at its start.
    page.locator(".proof-sentence").nth(1).locator("[data-readalong-link]").click()
    page.wait_for_function(
        "k => (document.querySelector('.readalong .sentence.current') || {id: ''}).id === 'sentence-' + k",
        arg=FIXED,
    )
    at = page.evaluate("document.querySelector('#book-audio').currentTime")
    assert at == pytest.approx(sentences[1]["start_s"], abs=0.05)
    assert page.locator(".readalong .sentence:target").inner_text() == "Rain hammered the glass all night."
    assert console == []


@browser_only
def test_on_a_phone_the_list_fits_and_its_players_play(served, proofed, browser):
    job_id = proofed["job"]["id"]
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(f"{served.url}/jobs/{job_id}#proof")
    page.wait_for_selector(".readalong[data-ready=true]")
    wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 0, f"the Job page scrolls sideways by {wide} px"
    for k in range(2):
        player = page.locator("audio.excerpt").nth(k)
        player.scroll_into_view_if_needed()
        box = player.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["width"] >= 250, box
        assert box["height"] >= 30, box  # its controls, big enough to touch
    clip = page.locator("audio.excerpt").nth(0)
    box = clip.bounding_box()
    assert box is not None
    page.evaluate(
        "(() => { const a = document.querySelectorAll('audio.excerpt')[0]; a.muted = true; "
        "a.addEventListener('playing', () => { a.dataset.played = 'yes'; }); })()"
    )
    clip.tap(position={"x": 20, "y": box["height"] / 2})  # its play control, at its start
    page.wait_for_function(
        "() => document.querySelectorAll('audio.excerpt')[0].dataset.played === 'yes'", timeout=10_000
    )
    page.wait_for_function("() => document.querySelectorAll('audio.excerpt')[0].paused", timeout=10_000)
    end = served.get(f"/v1/narrations/{job_id}/proof").json()["sentences"][0]["end_s"]
    assert excerpt_state(page, 0)[0] == pytest.approx(end, abs=0.15)  # played to its sentence's end
    context.close()
