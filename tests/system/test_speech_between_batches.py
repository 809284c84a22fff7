"""A speech request does not wait behind a book: with one worker narrating a book, a one-sentence
`POST /v1/audio/speech` is answered while the book still runs (the book yields its worker after its
batch in flight, worker/process/yielding.py), and the book then finishes from its checkpoints, its
attempt not counted, its output whole."""

from __future__ import annotations

import json
import time

from helpers.audio import decoded_samples
from helpers.procs import narrate, wait_until
from helpers.web import serve

SENTENCES = 24  # three groups of 8 rows on a CPU


def test_a_speech_request_is_spoken_between_the_batches_of_a_book(checkpoint, voice_wav):
    s = serve(checkpoint, NARRATE_CLIP_YIELD_S="1").with_worker()
    try:
        with open(voice_wav, "rb") as f:
            assert s.post("/v1/audio/voices", files={"audio_sample": f}, data={"name": "alice", "consent": "1"}).ok
        text = "\n\n".join(f"Paragraph {i} of the book is read here, slowly and well." for i in range(SENTENCES))
        book = s.post("/v1/narrations", data={"voice": "alice", "text": text, "format": "wav"}).json()

        def started() -> bool:
            now = s.get(f"/v1/narrations/{book['id']}").json()
            return now["status"] == "in_progress" and now["progress"]["sentences_done"] > 0

        wait_until(started, 120, "the book's first batch", poll=0.1)
        t0 = time.monotonic()
        speech = s.post("/v1/audio/speech", json={"model": "tts-1", "voice": "alice", "input": "Meanwhile, hello.",
                                                  "response_format": "wav"})  # fmt: skip
        waited = time.monotonic() - t0
        assert speech.status_code == 200 and len(speech.content) > 44, speech.text
        during = s.get(f"/v1/narrations/{book['id']}").json()
        assert during["status"] in ("queued", "in_progress"), (during, waited)  # answered before the book ended

        def ended() -> dict | None:
            now = s.get(f"/v1/narrations/{book['id']}").json()
            return now if now["status"] in ("completed", "failed", "cancelled") else None

        done = wait_until(ended, 180, "the book to end", poll=0.2)
        assert done["status"] == "completed" and done["progress"]["sentences_done"] == SENTENCES, done
        [wav] = [o for o in done["outputs"] if o["name"].endswith(".wav")]
        path = s.home / "out" / "narrations" / wav["name"]
        assert abs(decoded_samples(path).size / 24000 - done["duration_s"]) < 0.001
        result = json.loads(narrate(s.env, "status", book["id"], "--json").stdout)["result"]
        assert result["attempts"] == 1 and result["reused"] > 0, result  # a yield is no attempt; it went on
    finally:
        logs = s.close()
    assert "yields to 1 clip job(s) after its batch in flight" in logs, logs
    assert f"job {book['id']} requeued after yielding to clip jobs" in logs
    assert "Traceback" not in logs
    print(f"speech answered in {waited:.2f} s while the book ran")
