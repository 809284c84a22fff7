"""The worker log says how a long job advances: one INFO line per synthesized batch (number and
total, sentences, frames, frames/s, audio seconds, sentences done), not one per chunk."""

from __future__ import annotations

import logging
import re

from conftest import narrate, wait_for_job
from faults import book, fake_env, submit
from narrate.jobs.task.batch_log import BatchLog

LINE = re.compile(
    r"job (\S+): batch (\d+)/(\d+): (\d+) sentences?, (\d+) frames in [\d.]+ s \(([\d.]+) frames/s\), "
    r"([\d.]+) s of audio; (\d+)/(\d+) sentences done"
)


def test_the_worker_logs_each_batch_at_info(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=5)  # batches of 4
    doc = home / "book.txt"
    doc.write_text(book(10))
    job_id = submit(e, doc, voice_wav, home / "out" / "book.wav")
    proc = narrate(e, "worker", "--burst")
    assert proc.returncode == 0, proc.stderr
    st = wait_for_job(job_id)
    assert st["status"] == "finished", st
    lines = [m.groups() for m in map(LINE.search, proc.stderr.splitlines()) if m]
    assert [(g[0], g[1], g[2], g[3], g[7], g[8]) for g in lines] == [
        (job_id, "1", "3", "4", "4", "10"),
        (job_id, "2", "3", "4", "8", "10"),
        (job_id, "3", "3", "2", "10", "10"),
    ], proc.stderr[-3000:]
    assert sum(int(g[4]) for g in lines) == sum(st["result"]["frames"])
    audio = sum(float(g[6]) for g in lines)
    assert abs(audio - st["progress"]["audio_seconds"]) < 0.05 * len(lines)
    assert all(float(g[5]) > 0 for g in lines)
    assert "INFO" in next(line for line in proc.stderr.splitlines() if LINE.search(line))


class FakeProgress:
    done, total = 0, 3


def test_runaways_and_their_retry_are_named_as_such(caplog):
    log = BatchLog("job-1", todo=3, progress=FakeProgress())
    with caplog.at_level(logging.INFO, logger="narrate.jobs"):
        log.start([0, 1])
        log.chunk(frames=10, samples=24_000)
        log.chunk(frames=5, samples=12_000)  # chunks add up: no line of their own
        log.start([2])
        log.chunk(frames=3, samples=4_800)
        log.start([2])  # sentence 2 again: it was a runaway, its audio was dropped
        log.chunk(frames=7, samples=2_400)
        log.finish()
        log.finish()  # nothing in flight: no line
    text = [r.getMessage() for r in caplog.records]
    assert len(text) == 3, text
    assert text[0].startswith("job job-1: batch 1/2: 2 sentences, 15 frames in ") and "1.5 s of audio;" in text[0]
    assert text[1].startswith("job job-1: batch 2/2: 1 sentence, 3 frames")
    assert "0.2 s of audio, 1 runaway (no end within the budget) to synthesize again;" in text[1], text[1]
    assert text[2].startswith("job job-1: batch 2/2, runaways again: 1 sentence, 7 frames"), text[2]
