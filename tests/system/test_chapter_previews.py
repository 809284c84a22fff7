"""A book's finished chapters play while the rest is read (m4b: jobs/audio/previews.py): the API
lists each encoded chapter's `audio_url` in `progress.chapters` while the book is in progress, the
file decodes to the chapter's audio and answers Range, the Job page shows a player for it that a
real browser plays, and once the book is finished the previews are gone (the record, the files and
their folder): the book's own files replace them. The worker runs the fake engine, held after its first batch
(chapter one and the second chapter's title) for as long as the test looks (NARRATE_FAKE_HOLD_FILE)."""

from __future__ import annotations

import pytest
from helpers.audio import decoded_samples
from helpers.chromium import SKIP_REASON, find_chromium
from helpers.procs import wait_until
from helpers.web import serve

pytestmark = pytest.mark.skipif(find_chromium() is None, reason=SKIP_REASON)

TEXT = "\n\n".join(
    [
        "Chapter One",
        " ".join(f"The first chapter says sentence {i}." for i in range(6)),
        "Chapter Two",
        " ".join(f"The second chapter says sentence {i} at length." for i in range(12)),
    ]
)


def test_a_finished_chapter_plays_while_the_rest_is_read(checkpoint, voice_wav, page, tmp_path):
    hold = tmp_path / "hold"
    hold.touch()
    s = serve(checkpoint, NARRATE_ENGINE="fake", NARRATE_BATCH_SIZE="8", NARRATE_FAKE_HOLD_FILE=str(hold)).with_worker()
    try:
        with open(voice_wav, "rb") as f:
            made = s.post("/v1/narrations", data={"text": TEXT, "format": "m4b"}, files={"voice_sample": f})
        assert made.status_code == 202, made.text
        job_id = made.json()["id"]

        def first_chapter_playable() -> dict | None:
            now = s.get(f"/v1/narrations/{job_id}").json()
            assert now["status"] in ("queued", "in_progress"), now
            chapters = now["progress"]["chapters"]
            return now if chapters and chapters[0].get("audio_url") else None

        now = wait_until(first_chapter_playable, 120, "chapter one to be playable", poll=0.2)
        first, second = now["progress"]["chapters"][:2]
        assert second["audio_url"] is None, now  # (sentences_done is saved every few seconds: it may lag)
        assert second["sentences_done"] < second["sentences_total"]  # the rest is still being read

        got = s.get(first["audio_url"])
        assert got.status_code == 200 and got.headers["content-type"] == "audio/aac", got.text[:200]
        clip = tmp_path / "chapter-one.aac"
        clip.write_bytes(got.content)
        assert decoded_samples(clip).size > 24000 * 0.5  # its sentences, decoded by ffmpeg
        part = s.get(first["audio_url"], headers={"Range": "bytes=0-99"})
        assert part.status_code == 206 and len(part.content) == 100

        page.goto(f"{s.url}/jobs/{job_id}")
        player = page.locator("ol[data-field-chapters] li").first.locator("audio")
        player.wait_for(timeout=30_000)
        seconds = player.evaluate(
            """a => new Promise((ok, fail) => { a.addEventListener("playing", () => ok(a.duration), {once: true});
                a.addEventListener("error", () => fail(String(a.error && a.error.message)), {once: true});
                a.muted = true; a.play().catch(fail); })"""
        )
        assert seconds > 0.5
        assert s.get(f"/v1/narrations/{job_id}").json()["status"] == "in_progress"  # heard before the book was done
        hold.unlink()  # the rest of the book is read

        def ended() -> dict | None:
            now = s.get(f"/v1/narrations/{job_id}").json()
            return now if now["status"] in ("completed", "failed", "cancelled") else None

        done = wait_until(ended, 120, "the book to end", poll=0.5)
        assert done["status"] == "completed", done
        assert all(c.get("audio_url") is None for c in done["progress"]["chapters"])
        assert s.get(first["audio_url"]).status_code == 404  # the book's own file replaces it
        assert not list((s.home / "out").rglob(".narrate-preview-*")), list((s.home / "out").rglob("*"))
    finally:
        logs = s.close()
    assert "Traceback" not in logs and "cannot be played" not in logs, logs[-3000:]
