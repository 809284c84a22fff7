"""The worker log says how a long job advances: one INFO line per synthesized batch (number and
total, sentences, frames, frames/s, audio seconds, sentences done), not one per chunk."""

from __future__ import annotations

import re

from helpers.books import book
from helpers.fake import fake_env
from helpers.ops import submit
from helpers.procs import narrate, wait_for_job

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
