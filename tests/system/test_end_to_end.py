"""End to end on the real engine: CLI submit -> RQ -> a separate worker process running the real
mlx-audio Qwen3-TTS code (tiny random checkpoint) -> an audio file whose length is exact."""

from __future__ import annotations

import json
import signal

from helpers.audio import decoded_samples
from helpers.ops import submit_json
from helpers.procs import narrate, start_worker, stop_worker, wait_for_job

SAMPLES_PER_FRAME = 1920
DOC = (
    "The first paragraph has two sentences. Here is the second one.\n\n"
    "The second paragraph is here. It also has a second sentence! Does it have a third?\n\n"
    "The last paragraph is short.\n"
)
PARAGRAPHS = [2, 3, 1]  # sentences per paragraph


def expected_samples(frames: list[int], sentence_ms: int = 250, paragraph_ms: int = 750) -> int:
    within = sum(n - 1 for n in PARAGRAPHS)
    between = len(PARAGRAPHS) - 1
    return sum(frames) * SAMPLES_PER_FRAME + (within * sentence_ms + between * paragraph_ms) * 24


def submit_checked(env, doc, voice, out) -> str:
    [info] = submit_json(env, [doc], voice, "-o", str(out))
    assert info["status"] == "queued" and info["sentences"] == sum(PARAGRAPHS)
    return info["id"]


def check_finished(st: dict, out, exact: bool) -> dict:
    assert st["status"] == "finished", st
    res = st["result"]
    assert res["sentences"] == sum(PARAGRAPHS) and res["paragraphs"] == len(PARAGRAPHS)
    assert st["progress"]["done"] == st["progress"]["total"] == sum(PARAGRAPHS)
    assert len(res["frames"]) == 6 and all(0 < f <= 6 for f in res["frames"])
    # Random weights never emit EOS: every sentence is a runaway, retried once with a new seed.
    assert res["runaway_sentences"] == res["retried_sentences"] == list(range(6))
    assert st["output"] == str(out) and out.exists()
    pcm = decoded_samples(out)
    want = expected_samples(res["frames"])
    assert res["samples"] == want
    if exact:
        assert pcm.size == want
    else:  # lossy codecs pad: within one codec frame
        assert abs(pcm.size - want) <= SAMPLES_PER_FRAME, (pcm.size, want)
    assert abs(pcm.astype(float)).max() > 0  # real audio, not silence
    leftovers = [p.name for p in out.parent.iterdir() if "partial" in p.name]
    assert leftovers == []
    return res


def test_submit_worker_voice_cache_and_restart(env, home, voice_wav):
    env = dict(env, NARRATE_CACHE_MAX_GB="0")  # every job synthesizes (the sentence cache is tested elsewhere)
    doc = home / "book.txt"
    doc.write_text(DOC)
    out = home / "out"
    worker = start_worker(env)
    try:
        first = submit_checked(env, doc, voice_wav, out / "book.mp3")
        res = check_finished(wait_for_job(first), out / "book.mp3", exact=False)
        assert res["voice_cache"] == "miss" and res["speaker_encoder_runs"] == 1

        second = submit_checked(env, doc, voice_wav, out / "again.wav")
        res = check_finished(wait_for_job(second), out / "again.wav", exact=True)
        assert res["voice_cache"] == "hit" and res["speaker_encoder_runs"] == 0
    finally:
        log = stop_worker(worker)
    assert worker.returncode == 0, log

    worker = start_worker(env)  # a new process: the embedding comes from Redis, not memory
    try:
        third = submit_checked(env, doc, voice_wav, out / "third.flac")
        res = check_finished(wait_for_job(third), out / "third.flac", exact=True)
        assert res["voice_cache"] == "hit" and res["speaker_encoder_runs"] == 0
    finally:
        log = stop_worker(worker, signal.SIGINT)
    assert worker.returncode == 0, log


def test_external_redis_burst_worker_and_status(env, home, voice_wav, external_redis):
    doc = home / "book.md"
    doc.write_text("# " + DOC)
    job_id = submit_checked(env, doc, voice_wav, home / "out" / "ext.m4a")
    assert external_redis.llen("rq:queue:narrate") == 1
    proc = narrate(env, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    st = json.loads(narrate(env, "status", job_id, "--json").stdout)
    check_finished(st, home / "out" / "ext.m4a", exact=False)
    assert not (home / "valkey.sock").exists()  # the embedded server was not used
