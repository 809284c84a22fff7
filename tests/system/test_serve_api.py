"""`narrate serve` against a real worker on the tiny random checkpoint and the embedded server, over
HTTP: OpenAI's speech endpoint through the official `openai` SDK (whole, streamed, as server-sent
events, a sample as a data: URL, several lines), and a narration of a text with an uploaded sample:
202 and Location, the same id for the same request, events until the end, one callback, its files
downloaded whole and by Range and decoded with the right duration, delete."""

from __future__ import annotations

import base64
import io
import json
import time
import wave

import pytest
from helpers.audio import decoded_samples
from helpers.procs import wait_until
from helpers.web import Hooks, serve

FRAMES = 6 * 1920  # NARRATE_MAX_FRAMES=6: random weights speak every line to its budget
TEXT = "The first paragraph has two sentences. Here is the second one.\n\nA last short paragraph.\n"


@pytest.fixture(scope="module")
def served(checkpoint, voice_wav):
    hooks = Hooks()
    s = serve(checkpoint, NARRATE_CALLBACK_HOSTS=f"127.0.0.1:{hooks.port}").with_worker()
    s.hooks = hooks.received
    with open(voice_wav, "rb") as f:
        added = s.post("/v1/audio/voices", files={"audio_sample": f}, data={"name": "alice", "consent": "true"})
    assert added.status_code == 201, added.text
    yield s
    hooks.close()
    logs = s.close()
    assert "Traceback" not in logs, logs


def sdk(served):
    from openai import OpenAI

    return OpenAI(base_url=f"{served.url}/v1", api_key="unused-on-loopback", max_retries=0, timeout=120)


def decoded(data: bytes, tmp_path, suffix: str):
    path = tmp_path / f"clip{suffix}"
    path.write_bytes(data)
    return decoded_samples(path)


def test_speech_through_the_openai_sdk(served, voice_wav, tmp_path):
    client = sdk(served)
    wav = client.audio.speech.create(model="tts-1", voice="alice", input="Hello there.", response_format="wav")
    with wave.open(io.BytesIO(wav.content)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getnframes()) == (24000, 1, FRAMES)

    with client.audio.speech.with_streaming_response.create(
        model="gpt-4o-mini-tts", voice="alice", input="Hello there.", response_format="mp3"
    ) as streamed:
        assert streamed.headers["content-type"] == "audio/mpeg"
        mp3 = b"".join(streamed.iter_bytes())
    assert FRAMES <= decoded(mp3, tmp_path, ".mp3").size <= FRAMES + 2 * 1152  # the encoder's padding

    # Two lines (the first sentence alone, the rest together): two clip jobs, one stream.
    two = client.audio.speech.create(
        model="tts-1", voice="alice", input="One. Two and three. Four.", response_format="flac"
    )
    assert decoded(two.content, tmp_path, ".flac").size == 2 * FRAMES

    # A sample as a data: URL (never a path on the server), as server-sent events.
    url = "data:audio/wav;base64," + base64.b64encode(voice_wav.read_bytes()).decode()
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice=url, input="Hello there.", response_format="pcm", extra_body={"stream_format": "sse"}
    ) as events:
        assert events.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in events.iter_lines() if line.startswith("data: ")]
    said = [json.loads(line.removeprefix("data: ")) for line in lines]
    assert [e["type"] for e in said[:-1]] == ["speech.audio.delta"] * (len(said) - 1) and len(said) > 1
    assert said[-1]["type"] == "speech.audio.done" and said[-1]["usage"]["output_tokens"] == 2 * FRAMES
    pcm = b"".join(base64.b64decode(e["audio"]) for e in said[:-1])
    assert len(pcm) == 2 * FRAMES

    import openai

    with pytest.raises(openai.BadRequestError, match="only 1.0 is supported"):
        client.audio.speech.create(model="tts-1", voice="alice", input="Hi.", speed=2.0)
    with pytest.raises(openai.BadRequestError, match="no saved voice named 'nobody'"):
        client.audio.speech.create(model="tts-1", voice="nobody", input="Hi.")
    with pytest.raises(openai.APIStatusError, match="POST /v1/narrations") as too_long:
        client.audio.speech.create(model="tts-1", voice="alice", input="word " * 1000)
    assert too_long.value.status_code == 413


def events_of(served, job_id: str) -> list[dict]:
    with served.get(f"/v1/narrations/{job_id}/events", stream=True) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        return [json.loads(line[6:]) for line in r.iter_lines(decode_unicode=True) if line.startswith("data: ")]


def test_a_narration_of_a_text_and_a_sample(served, voice_wav, tmp_path):
    form = {
        "text": TEXT,
        "format": "wav",
        "subtitles": "srt",
        "callback_url": f"http://127.0.0.1:{served.env['NARRATE_CALLBACK_HOSTS'].split(':')[1]}/done",
    }
    sample = voice_wav.read_bytes()
    first = served.post("/v1/narrations", data=form, files={"voice_sample": ("me.wav", sample)})
    assert first.status_code == 202, first.text
    made = first.json()
    assert first.headers["location"] == f"/v1/narrations/{made['id']}"
    assert made["object"] == "narration" and made["status"] in ("queued", "in_progress")
    again = served.post("/v1/narrations", data=form, files={"voice_sample": ("me.wav", sample)}).json()
    assert again["id"] == made["id"] and again["duplicate"] in ("queued", "done")

    seen = events_of(served, made["id"])
    order = ["queued", "in_progress", "completed"]
    assert [order.index(e["status"]) for e in seen] == sorted(order.index(e["status"]) for e in seen)
    done = seen[-1]
    assert done["status"] == "completed" and done["progress"]["sentences_done"] == 3, done
    names = [o["name"] for o in done["outputs"]]
    assert names[0].endswith(".wav") and names[1:] == [names[0].removesuffix(".wav") + ".srt"], names

    book = done["outputs"][0]
    whole = served.get(book["url"])
    assert whole.status_code == 200 and len(whole.content) == book["bytes"]
    samples = decoded(whole.content, tmp_path, ".wav").size
    assert abs(samples / 24000 - done["duration_s"]) < 0.001 and abs(book["duration_s"] - done["duration_s"]) < 0.01
    head = served.get(book["url"], headers={"Range": "bytes=0-99"})
    assert head.status_code == 206 and head.headers["content-range"] == f"bytes 0-99/{book['bytes']}"
    tail = served.get(book["url"], headers={"Range": "bytes=100-"})
    assert tail.status_code == 206 and head.content + tail.content == whole.content
    assert served.get(book["url"], headers={"Range": f"bytes={book['bytes']}-"}).status_code == 416
    assert served.get(f"/v1/narrations/{made['id']}/files/..%2F..%2Fetc%2Fpasswd").status_code == 404

    wait_until(lambda: served.hooks, 10, "the callback")
    time.sleep(1.5)  # one more pass of the callback loop: still one
    assert len(served.hooks) == 1 and served.hooks[0]["id"] == made["id"]
    assert served.hooks[0]["status"] == "completed"

    repeat = served.post("/v1/narrations", data=form, files={"voice_sample": ("me.wav", sample)}).json()
    assert (repeat["id"], repeat["duplicate"], repeat["status"]) == (made["id"], "done", "completed")
    listed = served.get("/v1/narrations", params={"status": "completed"}).json()["data"]
    assert [n["id"] for n in listed] == [made["id"]]
    assert served.get("/v1/narrations", params={"status": "queued"}).json()["data"] == []

    deleted = served.delete(f"/v1/narrations/{made['id']}")
    assert deleted.status_code == 200 and sorted(deleted.json()["files"]) == sorted(names)
    assert list((served.home / "out" / "narrations").iterdir()) == []
    gone = served.get(f"/v1/narrations/{made['id']}")
    assert gone.status_code == 404 and "wrong id, or it expired" in gone.json()["error"]["message"]


def test_a_narration_with_a_cast(served, voice_wav):
    """A narrator's uploaded sample and a saved voice for a character named by the text's tags: the
    narration finishes with each voice's sentences."""
    text = "The narrator begins. [alice] Hello there, I am Alice. [/] The narrator ends the story."
    with open(voice_wav, "rb") as f:
        made = served.post(
            "/v1/narrations", data={"text": text, "cast_voice": "alice=alice"}, files={"voice_sample": f}
        )
    assert made.status_code == 202, made.text
    job_id = made.json()["id"]
    wait_until(lambda: served.get(f"/v1/narrations/{job_id}").json()["status"] == "completed", 120, "the cast book")
    voices = served.get(f"/v1/narrations/{job_id}").json()["voices"]
    assert {k: v["sentences"] for k, v in voices.items()} == {"narrator": 2, "alice": 1}
