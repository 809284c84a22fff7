"""A redo from the web, on a real `narrate serve` and a real fake-engine worker whose fake recognizer hears defects on
request (worker/testkit/fake_recognizer.py; each seed's take sounds different: NARRATE_FAKE_SEEDED): `POST
/v1/narrations/{id}/redo` renders one sentence again and the book is stitched again (only that sentence synthesized,
its stretch of the book changed, every other sample the same), the old narration says by which it was superseded;
its errors (404, 409 not_finished / not_redoable, 400 naming the field, 422 for a body of the wrong shape) enqueue
nothing; and the Job page in Chromium: Redo, a corrected text, Accept and Redo all flagged, each leading to the new
job, on a desktop screen and on a phone's."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest
from helpers.chromium import SKIP_REASON, find_chromium
from helpers.fake import synthesized
from helpers.procs import wait_until
from helpers.web import Served, serve

# The second word of a sentence holding one of these is dropped the first time a take of it is heard (in the
# worker's life): flagged, kept so with no retakes; heard right from then on.
FLAWS = ";".join(
    f"{words}=drop"
    for words in ("gulls were", "owls hooted", "cats purred", "dogs barked", "frogs sang", "bees hummed", "crows cawed")
)
API_BOOK = "The lamp was lit. The gulls were loud. A bell rang twice. The tide went out slowly."
PAGE_BOOK = (
    "Morning came early. The owls hooted long. The cats purred softly. Rain fell on the roof. "
    "The dogs barked twice. The frogs sang all night. Nobody minded."
)
PHONE_BOOK = "The bees hummed all day. Wind shook the door. The crows cawed at noon."
browser_only = pytest.mark.skipif(find_chromium() is None, reason=SKIP_REASON)


@pytest.fixture(scope="module")
def served(checkpoint, tmp_path_factory):
    log = tmp_path_factory.mktemp("redo-web") / "fake.log"
    s = serve(
        checkpoint,
        NARRATE_ENGINE="fake",
        NARRATE_FAKE_DELAY_MS="5",
        NARRATE_FAKE_SEEDED="1",
        NARRATE_FAKE_LOG=str(log),
        NARRATE_MAX_FRAMES="40",
        NARRATE_FAKE_PROOF_FLAW=FLAWS,
        NARRATE_PROOF_RATE_FACTOR="1000",
    ).with_worker()
    s.env["NARRATE_FAKE_LOG"] = str(log)
    yield s
    logs = s.close()
    assert "Traceback" not in logs, logs[-4000:]


def completed(served: Served, job_id: str) -> dict:
    wait_until(
        lambda: served.get(f"/v1/narrations/{job_id}").json()["status"] in ("completed", "failed"),
        120,
        f"narration {job_id}",
    )
    job = served.get(f"/v1/narrations/{job_id}").json()
    assert job["status"] == "completed", job
    return job


def narrated(served: Served, voice_wav, text: str, **fields: str) -> dict:
    with open(voice_wav, "rb") as f:
        made = served.post(
            "/v1/narrations",
            data={"text": text, "format": "wav", "subtitles": "json", **fields},
            files={"voice_sample": f},
        )
    assert made.status_code == 202, made.text
    return completed(served, made.json()["id"])


def proofed(served: Served, voice_wav, text: str) -> dict:
    return narrated(served, voice_wav, text, proof="auto", retakes="0")


def file_of(served: Served, job: dict, suffix: str) -> bytes:
    [out] = [f for f in job["outputs"] if f["name"].endswith(suffix)]
    got = served.get(out["url"])
    assert got.status_code == 200, got.text
    return got.content


def samples(served: Served, job: dict) -> tuple[np.ndarray, int]:
    with wave.open(io.BytesIO(file_of(served, job, ".wav"))) as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2"), w.getframerate()


def fake_log(served: Served) -> list[tuple[int, int]]:
    from pathlib import Path

    return synthesized(Path(served.env["NARRATE_FAKE_LOG"]).parent)


def error(got, status: int, param: str | None = None, code: str | None = None, said: str = "") -> dict:
    assert got.status_code == status, (got.status_code, got.text)
    err = got.json()["error"]
    assert err["param"] == param and (code is None or err["code"] == code) and said in err["message"], err
    return err


def stored(served: Served) -> tuple[list[str], dict[str, int]]:
    """The jobs, narrate's own keys (documents, claims) and the queues' lengths."""
    from narrate.jobs.server.connection import Connection
    from narrate.jobs.settings import Settings

    with Connection(Settings(home=served.home)) as conn:
        r = conn.redis
        keys = sorted(k.decode() for k in r.keys("*") if k.startswith((b"rq:job:", b"narrate:")))
        keys = [k for k in keys if not k.startswith(("narrate:flash:", "narrate:session"))]
        return keys, {k.decode(): int(r.llen(k)) for k in r.keys("rq:queue:*")}


def test_the_api_renders_one_sentence_again_and_the_book_is_stitched_again(served, voice_wav):
    old = proofed(served, voice_wav, API_BOOK)
    assert old["proof"]["still_flagged"] == 1
    before, rate = samples(served, old)
    timing = served.get([f for f in old["outputs"] if f["name"].endswith(".json")][0]["url"]).json()["sentences"]
    first = len(fake_log(served))

    got = served.post(f"/v1/narrations/{old['id']}/redo", json={"sentences": [2]})
    assert got.status_code == 202, got.text
    redo = got.json()
    new_id = redo["id"]
    assert got.headers["Location"] == f"/v1/narrations/{new_id}" and new_id != old["id"]
    assert (redo["object"], redo["redo_of"], redo["sentences"], redo["accepted"]) == (
        "narration.redo",
        old["id"],
        [2],
        [],
    )
    assert redo["texts"] == {"2": "The gulls were loud."} and redo["duplicate"] is None
    assert redo["narration"]["id"] == new_id and redo["narration"]["redo_of"] == old["id"]
    assert redo["narration"]["redo"] == {"sentences": [2], "accepted": []}

    new = completed(served, new_id)
    assert [i for i, _ in fake_log(served)[first:]] == [1]  # sentence 2 (index 1) alone was synthesized again
    after, _ = samples(served, new)
    assert len(after) == len(before)  # the same text, the same length: every other sentence where it was
    s2 = timing[1]
    lo, hi = int(s2["start"] * rate), int(s2["end"] * rate)
    assert not np.array_equal(after[lo:hi], before[lo:hi])  # its new take: another seed, another sound
    changed = np.flatnonzero(after != before)
    assert changed.min() >= lo - rate // 100 and changed.max() <= hi + rate // 100, (
        changed.min(),
        changed.max(),
        lo,
        hi,
    )
    assert new["proof"]["still_flagged"] == 0  # heard again (right, this time), nothing else heard
    assert served.get(f"/v1/narrations/{old['id']}").json()["superseded_by"] == new_id
    for path in ("/books", "/queue"):  # one card a book: the redo, marked so, stands for the version it replaced
        page = served.get(path).text
        assert f'data-id="{new_id}"' in page and f'data-id="{old["id"]}"' not in page, path
        assert f'a redo of <a href="/jobs/{old["id"]}">' in page, path

    # The old narration is not redone again: the new one is.
    error(
        served.post(f"/v1/narrations/{old['id']}/redo", json={"sentences": [1]}),
        409,
        code="not_redoable",
        said=f"was redone as job {new_id}: redo that one",
    )


def test_a_bad_redo_is_an_error_naming_its_field_and_enqueues_nothing(served, voice_wav):
    done = proofed(served, voice_wav, "One clean sentence. Another clean sentence.")
    plain = narrated(served, voice_wav, "Nobody proofed this one. Nor this.")
    with open(voice_wav, "rb") as f:
        waiting = served.post(
            "/v1/narrations", data={"text": "Later, perhaps.", "in": "2h"}, files={"voice_sample": f}
        ).json()["id"]
    url = f"/v1/narrations/{done['id']}/redo"
    held = stored(served)
    error(served.post("/v1/narrations/narrate-nope/redo", json={"sentences": [1]}), 404, code="job_not_found")
    error(
        served.post(f"/v1/narrations/{waiting}/redo", json={"sentences": [1]}),
        409,
        code="not_finished",
        said=f"narration {waiting} is scheduled: redo it once it has completed",
    )
    for body, param, said in [
        ({"sentences": [3]}, "sentences", "sentence 3 is not in job"),
        ({"sentences": [0]}, "sentences", "its sentences are 1-2"),
        ({}, "sentences", "name the sentences to render again"),
        ({"accept": [9]}, "accept", "accept 9 is not in job"),
        ({"sentences": [1, 2], "text": "Two at once."}, "text", "text corrects one sentence; 2 sentences named"),
        ({"sentences": [1], "text": "  "}, "text", "text is empty"),
        ({"sentences": [1], "seed": -1}, "seed", "seed -1 is out of range"),
        ({"sentences": [2], "accept": [2]}, "accept", "cannot be rendered again and accepted at once"),
        ({"sentences": [1], "lexicon": {"?": "question"}}, "lexicon", "has no letters or digits"),
        ({"sentences": [1], "lexicon": {}}, "lexicon", "lexicon has no entries"),
        ({"flagged": True}, "flagged", "has no sentence left flagged"),
    ]:
        error(served.post(url, json=body), 400, param, "bad_input", said)
    error(
        served.post(f"/v1/narrations/{plain['id']}/redo", json={"flagged": True}),
        400,
        "flagged",
        said="was not proofed (proof): flagged has no flags to go by",
    )
    error(served.post(url, json={"sentence": [1]}), 422, "sentence")  # an unknown field
    error(served.post(url, json={"sentences": "1"}), 422, "sentences")
    error(served.post(url, data=b"{", headers={"Content-Type": "application/json"}), 422)
    form = {"do": "redo", "sentence": "1"}  # the Job page's form, posted by another site's page: refused
    assert (
        served.post(
            f"/jobs/{done['id']}/redo", data=form, headers={"Origin": "http://evil.example"}, allow_redirects=False
        ).status_code
        == 403
    )
    assert (
        served.post(
            f"/jobs/{done['id']}/redo", data=form, headers={"Sec-Fetch-Site": "cross-site"}, allow_redirects=False
        ).status_code
        == 403
    )
    assert stored(served) == held  # nothing enqueued, claimed or stored

    doc = served.get("/openapi.json").json()
    op = doc["paths"]["/v1/narrations/{narration_id}/redo"]["post"]
    assert op["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/RedoRequest"}
    assert op["responses"]["202"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Redo"}
    assert {"400", "404", "409", "422"} <= set(op["responses"])
    fields = doc["components"]["schemas"]["RedoRequest"]["properties"]
    assert set(fields) == {"sentences", "flagged", "seed", "text", "lexicon", "accept", "priority"}


def sentence_item(page, number: int):
    return page.locator(f".proof-sentence[data-index='{number - 1}']")


def held_still(page) -> None:
    """The Job page's live updates answered with a stream that asks to come back in ten minutes: a page stays as
    it was loaded (with what its action said), instead of reloading once the job has ended."""
    page.route(
        "**/v1/narrations/*/events",
        lambda route: route.fulfill(
            status=200, headers={"Content-Type": "text/event-stream"}, body="retry: 600000\n\n"
        ),
    )


def on_new_job(page, served: Served, old_id: str, said: str) -> str:
    """The page the button led to: the new job's, saying what was done and whose redo it is; its id, once it has
    completed and its page is loaded again."""
    page.wait_for_url(lambda url: "/jobs/" in url and old_id not in url)
    new_id = page.url.rsplit("/", 1)[1].split("#")[0]
    assert said in page.locator("p.notice[role=status]").inner_text()
    assert page.locator("[data-redo-of] a").get_attribute("href") == f"/jobs/{old_id}"
    completed(served, new_id)
    page.reload()
    page.wait_for_selector(".status.completed[data-field=status]")
    return new_id


@browser_only
def test_the_job_page_redoes_corrects_and_accepts_flagged_sentences(served, voice_wav, page):
    console: list[str] = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
    old = proofed(served, voice_wav, PAGE_BOOK)
    assert old["proof"]["still_flagged"] == 4  # sentences 2, 3, 5, 6
    held_still(page)
    page.goto(f"{served.url}/jobs/{old['id']}")
    assert page.locator(".proof-sentence").count() == 4
    assert page.locator("[data-redo]").count() == 4 and page.locator("[data-accept]").count() == 4
    assert page.locator("[data-redo-flagged]").inner_text() == "Redo all flagged (4)"

    sentence_item(page, 2).locator("[data-redo]").click()  # another seed
    one = on_new_job(page, served, old["id"], "sentence 2 rendered again (The owls hooted long.)")
    assert page.locator(".proof-sentence").count() == 3 and sentence_item(page, 2).count() == 0
    page.goto(f"{served.url}/jobs/{old['id']}")
    assert page.locator("[data-superseded] a").get_attribute("href") == f"/jobs/{one}"
    assert page.locator("[data-redo], [data-accept], [data-redo-flagged]").count() == 0  # redo the new one

    page.goto(f"{served.url}/jobs/{one}")
    item = sentence_item(page, 3)
    item.locator(".proof-correct summary").click()
    item.locator("[data-redo-text]").fill("The cat purred softly.")
    item.locator("[data-redo-with-text]").click()
    two = on_new_job(page, served, one, "sentence 3 rendered again (The cat purred softly.)")
    timing = served.get([f for f in completed(served, two)["outputs"] if f["name"].endswith(".json")][0]["url"])
    assert timing.json()["sentences"][2]["text"] == "The cat purred softly."
    assert sentence_item(page, 3).count() == 0

    sentence_item(page, 5).locator("[data-accept]").click()  # its take is good as it is
    three = on_new_job(page, served, two, "take 5 accepted")
    assert sentence_item(page, 5).count() == 0 and page.locator("[data-proof-count=still_flagged]").inner_text() == "1"
    n = len(fake_log(served))

    page.locator("[data-redo-flagged]").click()  # the one left: sentence 6
    four = on_new_job(page, served, three, "sentence 6 rendered again")
    assert [i for i, _ in fake_log(served)[n:]] == [5]
    assert "No sentence was flagged." in page.locator("[data-proof]").inner_text()
    assert served.get(f"/v1/narrations/{three}").json()["superseded_by"] == four
    assert page.locator("[data-redo]").count() == 0  # nothing listed: nothing flagged
    assert console == []


@browser_only
def test_on_a_phone_the_controls_fit_and_redo_all_flagged_leads_to_the_new_job(served, voice_wav, browser):
    old = proofed(served, voice_wav, PHONE_BOOK)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    held_still(page)
    page.goto(f"{served.url}/jobs/{old['id']}#proof")
    for k in (1, 3):
        sentence_item(page, k).locator(".proof-correct summary").tap()
    wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 0, f"the Job page scrolls sideways by {wide} px"
    for control in ("[data-redo]", "[data-accept]", "[data-redo-with-text]", "[data-redo-text]", "[data-redo-flagged]"):
        found = page.locator(control)
        for k in range(found.count()):
            found.nth(k).scroll_into_view_if_needed()
            box = found.nth(k).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (control, box)
            assert box["height"] >= 30, (control, box)  # big enough to touch

    # The text as it was is no correction: the page says so, and nothing is enqueued.
    sentence_item(page, 1).locator("[data-redo-with-text]").tap()
    page.wait_for_selector("p.error[role=alert]")
    assert "text is as it was" in page.locator("p.error[role=alert]").inner_text() and old["id"] in page.url

    page.locator("[data-redo-flagged]").tap()
    on_new_job(page, served, old["id"], "sentences 1, 3 rendered again")
    assert "No sentence was flagged." in page.locator("[data-proof]").inner_text()
    context.close()


def test_an_mp3_book_redone_keeps_every_segment_but_the_one_it_changed(served, voice_wav):
    """A real worker's mp3 book is encoded in segments (jobs/audio/mp3frames.py), so its redo takes the segments it
    did not change from the segment cache: the two stitches' records name the same segments but one."""
    import json

    text = "\n\n".join(f"# Part {c}\n\nThe first line of part {c} is here. The second follows it." for c in range(3))
    old = narrated(served, voice_wav, text, format="mp3")
    got = served.post(f"/v1/narrations/{old['id']}/redo", json={"sentences": [3], "seed": 7})
    assert got.status_code == 202, got.text
    new = completed(served, got.json()["id"])
    books = served.home / "segments" / "books"
    was, now = (json.loads((books / f"{j['id']}.json").read_text())["segments"] for j in (old, new))
    assert len(was) == len(now) == 3 and sum(a != b for a, b in zip(was, now, strict=True)) == 1
    assert new["duration_s"] == pytest.approx(old["duration_s"], abs=1.0)
