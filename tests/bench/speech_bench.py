"""A speech request while a book is narrated, three ways side by side on one worker: the request
waits for the book (`wait`: NARRATE_CLIP_RIDE=0, NARRATE_CLIP_YIELD_S=0), the book yields its
worker after its batch in flight (`yield`: NARRATE_CLIP_RIDE=0) or the request rides along the
book's batches (`ride`, the default). For each: the first audio byte of each one-sentence
`POST /v1/audio/speech` (`response_format` pcm) sent while the book runs, and the book's wall time
from submit to finished, against the same book alone. Prints the figures and writes JSON.

    .venv/bin/python tests/bench/speech_bench.py --model DIR [--sentences 150] [--requests 5]
        [--every 10] [--max-frames 32] [--json FILE]

DIR: a checkpoint (e.g. `python -m narrate.worker.testkit.random_checkpoint DIR`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

import requests

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # for helpers/, as tests/conftest.py has it for the tests

from helpers.audio import write_voice  # noqa: E402
from helpers.procs import wait_until  # noqa: E402
from helpers.web import serve  # noqa: E402

WAYS = {"alone": {}, "wait": {"NARRATE_CLIP_RIDE": "0", "NARRATE_CLIP_YIELD_S": "0"},
        "yield": {"NARRATE_CLIP_RIDE": "0", "NARRATE_CLIP_YIELD_S": "1"}, "ride": {}}  # fmt: skip


def first_byte(url: str, text: str) -> float:
    t0 = time.monotonic()
    body = {"model": "tts-1", "voice": "alice", "input": text, "response_format": "pcm"}
    with requests.post(f"{url}/v1/audio/speech", json=body, stream=True, timeout=900) as r:
        r.raise_for_status()
        next(r.iter_content(chunk_size=None))
        took = time.monotonic() - t0
        for _ in r.iter_content(chunk_size=None):
            pass
    return took


def run(way: str, model: Path, voice: Path, sentences: int, requests_n: int, every: float, frames: int) -> dict:
    # random weights never end a sentence: no second take of each (NARRATE_RUNAWAY_RETRIES=0)
    s = serve(model, NARRATE_MAX_FRAMES=str(frames), NARRATE_RUNAWAY_RETRIES="0", **WAYS[way]).with_worker()
    try:
        with open(voice, "rb") as f:
            assert s.post("/v1/audio/voices", files={"audio_sample": f}, data={"name": "alice", "consent": "1"}).ok
        text = "\n\n".join(f"Paragraph {i} of the book is read here, slowly and well." for i in range(sentences))
        t0 = time.monotonic()
        book = s.post("/v1/narrations", data={"voice": "alice", "text": text, "format": "wav"}).json()

        def status() -> dict:
            return s.get(f"/v1/narrations/{book['id']}").json()

        wait_until(lambda: status()["status"] == "in_progress", 300, "the book to start", poll=0.1)
        latencies: list[float] = []
        threads = []
        if way != "alone":
            for k in range(requests_n):
                t = threading.Thread(target=lambda k=k: latencies.append(first_byte(s.url, f"Request {k}, hello.")))
                t.start()
                threads.append(t)
                time.sleep(every)
        done = wait_until(lambda: status() if status()["status"] in ("completed", "failed") else None, 3600,
                          "the book", poll=0.2)  # fmt: skip
        book_s = time.monotonic() - t0
        for t in threads:
            t.join()
        assert done["status"] == "completed", done
    finally:
        s.close()
    return {"book_s": round(book_s, 2), "first_byte_s": sorted(round(x, 2) for x in latencies)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--sentences", type=int, default=150)
    ap.add_argument("--requests", type=int, default=5)
    ap.add_argument("--every", type=float, default=10.0, help="seconds between requests")
    ap.add_argument("--max-frames", type=int, default=32, help="each sentence's frames (random weights: no EOS)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    voice = Path(os.environ.get("TMPDIR", "/tmp")) / "speech-bench-voice.wav"
    write_voice(voice)
    out: dict = {"sentences": a.sentences, "max_frames": a.max_frames, "requests": a.requests, "every_s": a.every,
                 "cpus": os.cpu_count(), "ways": {}}  # fmt: skip
    for way in WAYS:
        got = run(way, a.model, voice, a.sentences, 1 if way == "wait" else a.requests, a.every, a.max_frames)
        out["ways"][way] = got
        print(f"{way:6s} book {got['book_s']:7.2f} s  first audio byte {got['first_byte_s']}", flush=True)
    alone = out["ways"]["alone"]["book_s"]
    out["book_slowdown_s"] = {w: round(v["book_s"] - alone, 2) for w, v in out["ways"].items() if w != "alone"}
    print("book slowdown against alone (s):", out["book_slowdown_s"])
    if a.json:
        a.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
