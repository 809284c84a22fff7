"""A speech request while a book is narrated, three ways side by side on one worker: the request
waits for the book (`wait`: NARRATE_CLIP_RIDE=0, NARRATE_CLIP_YIELD_S=0), the book yields its
worker after its batch in flight (`yield`: NARRATE_CLIP_RIDE=0) or the request rides along the
book's batches (`ride`, the default). For each: the first audio byte of each one-sentence
`POST /v1/audio/speech` (`response_format` pcm) sent while the book runs (each answered before the
book ended, and their median and 95th percentile; those that ended after it are only counted),
the book's wall time from submit to finished (its status followed on a thread of its own),
against the same book alone (`alone`), and the commands the Redis server ran meanwhile (its INFO
commandstats: all of them, the server's, the worker's and the book's). Prints the figures and
writes JSON.

    .venv/bin/python tests/bench/speech_bench.py --model DIR [--sentences 150] [--requests 5]
        [--every 10] [--max-frames 32] [--ways alone,wait,yield,ride] [--label NAME] [--json FILE]

DIR: a checkpoint (e.g. `python -m narrate.worker.testkit.random_checkpoint DIR`). The servers and
workers are started as `python -m narrate.cli.main`, so PYTHONPATH chooses the narrate they run
(another checkout's, to compare two versions with this same benchmark)."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import threading
import time
from pathlib import Path

import redis
import requests

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # for helpers/, as tests/conftest.py has it for the tests

from helpers.audio import write_voice  # noqa: E402
from helpers.procs import wait_until  # noqa: E402
from helpers.web import Served, add_voice, post_book, serve  # noqa: E402

WAYS = {
    "alone": {},
    "wait": {"NARRATE_CLIP_RIDE": "0", "NARRATE_CLIP_YIELD_S": "0"},
    "yield": {"NARRATE_CLIP_RIDE": "0", "NARRATE_CLIP_YIELD_S": "1"},
    "ride": {},
}


def first_byte(url: str, text: str) -> tuple[float, float]:
    """(seconds to the first audio byte, when the answer ended: monotonic)."""
    t0 = time.monotonic()
    body = {"model": "tts-1", "voice": "alice", "input": text, "response_format": "pcm"}
    with requests.post(f"{url}/v1/audio/speech", json=body, stream=True, timeout=900) as r:
        r.raise_for_status()
        next(r.iter_content(chunk_size=None))
        took = time.monotonic() - t0
        for _ in r.iter_content(chunk_size=None):
            pass
    return took, time.monotonic()


def percentile(values: list[float], p: float) -> float | None:
    """The p-th percentile (0-100), linear between the nearest ranks; None of nothing."""
    if not values:
        return None
    xs = sorted(values)
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return round(xs[lo] + (xs[hi] - xs[lo]) * (k - lo), 3)


def commands(s: Served) -> dict[str, int]:
    """Calls of each command the server has run so far (the embedded Valkey of the server's home)."""
    r = redis.Redis(unix_socket_path=str(s.home / "valkey.sock"))
    try:
        stats = r.info("commandstats")
    finally:
        r.close()
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


def run(way: str, model: Path, voice: Path, sentences: int, requests_n: int, every: float, frames: int) -> dict:
    # random weights never end a sentence: no second take of each (NARRATE_RUNAWAY_RETRIES=0)
    s = serve(model, NARRATE_MAX_FRAMES=str(frames), NARRATE_RUNAWAY_RETRIES="0", **WAYS[way]).with_worker()
    try:
        add_voice(s, voice)
        t0 = time.monotonic()
        book = post_book(s, sentences)

        def status() -> dict:
            return s.get(f"/v1/narrations/{book['id']}").json()

        wait_until(lambda: status()["status"] == "in_progress", 300, "the book to start", poll=0.1)
        before = commands(s)
        started = time.monotonic()
        ended: list[tuple[float, dict]] = []  # (when, the narration) once the book has ended

        def follow() -> None:
            done = wait_until(
                lambda: status() if status()["status"] in ("completed", "failed") else None, 3600, "the book", poll=0.2
            )
            ended.append((time.monotonic(), done))

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        answers: list[tuple[float, float]] = []
        threads = []
        if way != "alone":
            for k in range(requests_n):
                t = threading.Thread(target=lambda k=k: answers.append(first_byte(s.url, f"Request {k}, hello.")))
                t.start()
                threads.append(t)
                time.sleep(every)
        for t in threads:
            t.join()
        follower.join()
        after = commands(s)
        book_end, done = ended[0]
        book_s = book_end - t0
        assert done["status"] == "completed", done
        assert len(answers) == (0 if way == "alone" else requests_n), answers
    finally:
        s.close()
    beside = [took for took, end in answers if end <= book_end]  # answered while the book still ran
    if len(beside) < len(answers):
        print(
            f"{way}: {len(answers) - len(beside)} request(s) ended after the book: a longer book (--sentences) "
            "or less time between requests (--every) keeps them beside it",
            flush=True,
        )
    ran = {k: n - before.get(k, 0) for k, n in after.items() if n > before.get(k, 0)}
    per_s = sum(ran.values()) / (book_end - started)
    top = dict(sorted(ran.items(), key=lambda kv: -kv[1])[:8])
    return {
        "book_s": round(book_s, 2),
        "first_byte_s": sorted(round(x, 2) for x in beside),
        "after_the_book": len(answers) - len(beside),
        "first_byte_p50_s": percentile(beside, 50),
        "first_byte_p95_s": percentile(beside, 95),
        "redis_commands_per_s": round(per_s, 1),
        "redis_commands": top,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--sentences", type=int, default=150)
    ap.add_argument("--requests", type=int, default=5)
    ap.add_argument("--every", type=float, default=10.0, help="seconds between requests")
    ap.add_argument("--max-frames", type=int, default=32, help="each sentence's frames (random weights: no EOS)")
    ap.add_argument("--ways", default=",".join(WAYS), help="which of alone,wait,yield,ride (in this order)")
    ap.add_argument("--label", default="", help="a name for this run in the JSON (e.g. the version measured)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    ways = [w for w in a.ways.split(",") if w]
    unknown = set(ways) - set(WAYS)
    if unknown:
        ap.error(f"--ways: unknown {sorted(unknown)}; choose from {','.join(WAYS)}")
    voice = Path(os.environ.get("TMPDIR", "/tmp")) / "speech-bench-voice.wav"
    write_voice(voice)
    out: dict = {
        "date": datetime.date.today().isoformat(),
        "label": a.label,
        "sentences": a.sentences,
        "max_frames": a.max_frames,
        "requests": a.requests,
        "every_s": a.every,
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "ways": {},
    }
    for way in ways:
        got = run(way, a.model, voice, a.sentences, 1 if way == "wait" else a.requests, a.every, a.max_frames)
        out["ways"][way] = got
        print(
            f"{way:6s} book {got['book_s']:7.2f} s  first audio byte p50 {got['first_byte_p50_s']} s "
            f"p95 {got['first_byte_p95_s']} s: {got['first_byte_s']}; Redis {got['redis_commands_per_s']} "
            f"commands/s {got['redis_commands']}",
            flush=True,
        )
    out["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if "alone" in out["ways"]:
        alone = out["ways"]["alone"]["book_s"]
        out["book_slowdown_s"] = {w: round(v["book_s"] - alone, 2) for w, v in out["ways"].items() if w != "alone"}
        out["book_slowdown_ratio"] = {w: round(v["book_s"] / alone, 3) for w, v in out["ways"].items() if w != "alone"}
        print("book slowdown against alone (s):", out["book_slowdown_s"], "ratio:", out["book_slowdown_ratio"])
    print("JSON:", json.dumps(out), flush=True)
    if a.json:
        a.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
