"""A speech request does not wait behind a book. With one worker narrating a book:

- a one-line `POST /v1/audio/speech` for the model the book has loaded rides along the book's
  batches (worker/process/clip_watch.py, worker/engine/admission.py): its audio streams while the
  book runs (the same bytes as the clip kept whole), and the book never stops: one attempt,
  nothing reused from checkpoints, its output whole;
- a preview for another model makes the book yield its worker after its batch in flight: the
  preview is made between the book's batches, and the book then finishes from its checkpoints, its
  attempt not counted."""

from __future__ import annotations

import json
import time

from helpers.audio import decoded_samples
from helpers.procs import narrate, wait_until
from helpers.web import Served, add_voice, post_book, serve

SENTENCES = 24  # three groups of 8 rows on a CPU
LONGER = 40  # the yield's book: still running once the preview's process has started and its clip waited


def start_book(s: Served, voice_wav, sentences: int = SENTENCES) -> dict:
    add_voice(s, voice_wav)
    book = post_book(s, sentences)

    def started() -> bool:
        now = s.get(f"/v1/narrations/{book['id']}").json()
        return now["status"] == "in_progress" and now["progress"]["sentences_done"] > 0

    wait_until(started, 120, "the book's first batch", poll=0.1)
    return book


def finished_book(s: Served, book: dict, sentences: int = SENTENCES) -> dict:
    def ended() -> dict | None:
        now = s.get(f"/v1/narrations/{book['id']}").json()
        return now if now["status"] in ("completed", "failed", "cancelled") else None

    done = wait_until(ended, 180, "the book to end", poll=0.2)
    assert done["status"] == "completed" and done["progress"]["sentences_done"] == sentences, done
    [wav] = [o for o in done["outputs"] if o["name"].endswith(".wav")]
    path = s.home / "out" / "narrations" / wav["name"]
    assert abs(decoded_samples(path).size / 24000 - done["duration_s"]) < 0.001
    return json.loads(narrate(s.env, "status", book["id"], "--json").stdout)["result"]


def test_a_speech_request_rides_along_the_books_batches(checkpoint, voice_wav):
    s = serve(checkpoint, NARRATE_CLIP_YIELD_S="1").with_worker()
    try:
        book = start_book(s, voice_wav)
        t0 = time.monotonic()
        with s.post(
            "/v1/audio/speech",
            json={"model": "tts-1", "voice": "alice", "input": "Meanwhile, hello.", "response_format": "pcm"},
            stream=True,
        ) as speech:
            pieces = speech.iter_content(chunk_size=None)
            first = next(pieces)
            first_s = time.monotonic() - t0
            body = first + b"".join(pieces)
        waited = time.monotonic() - t0
        assert speech.status_code == 200 and len(body) > 0 and len(body) % 2 == 0
        during = s.get(f"/v1/narrations/{book['id']}").json()
        assert during["status"] == "in_progress", (during, waited)  # answered while the book ran on
        result = finished_book(s, book)
        assert result["attempts"] == 1 and result["reused"] == 0, result  # it never stopped
        again = s.post(
            "/v1/audio/speech",
            json={"model": "tts-1", "voice": "alice", "input": "Meanwhile, hello.", "response_format": "pcm"},
        )
        assert again.status_code == 200 and again.content == body  # the pieces streamed are the clip kept whole
    finally:
        logs = s.close()
    assert "differ" not in logs
    assert f"job {book['id']} takes clip job narrate-clip-" in logs, logs
    assert f"spoken along job {book['id']}" in logs
    assert "yields to" not in logs and "requeued" not in logs
    assert "Traceback" not in logs
    print(f"speech along a book: first audio bytes after {first_s:.2f} s, whole answer after {waited:.2f} s")


def test_a_preview_for_another_model_is_made_between_the_books_batches(checkpoint, custom_voice_checkpoint, voice_wav):
    s = serve(checkpoint, NARRATE_CLIP_YIELD_S="1").with_worker()
    try:
        book = start_book(s, voice_wav, LONGER)
        t0 = time.monotonic()
        out = s.home / "aiden.wav"
        made = narrate(
            s.env,
            "voice",
            "preview",
            "aiden",
            "--model",
            str(custom_voice_checkpoint),
            "--text",
            "Meanwhile, hello.",
            "-o",
            str(out),
        )
        waited = time.monotonic() - t0
        assert made.returncode == 0 and decoded_samples(out).size > 0, made.stderr
        # Made between the book's batches: the book yielded to it and went on from its checkpoints (the logs and
        # `reused` below), whether or not it has ended by the time this process reads it on a busy machine.
        result = finished_book(s, book, LONGER)
        assert result["attempts"] == 1 and result["reused"] > 0, result  # a yield is no attempt; it went on
    finally:
        logs = s.close()
    assert "yields to 1 clip job(s) after its batch in flight" in logs, logs
    assert f"job {book['id']} requeued after yielding to clip jobs" in logs
    assert "takes clip job" not in logs
    assert "Traceback" not in logs
    print(f"preview for another model made in {waited:.2f} s while the book ran")
