"""A batch whose sentences all run to their frame cap (random weights never end a sentence): its
worker log line reports the frames and seconds the batch really synthesized (then dropped, to
synthesize again), not "0 frames ... 0.0 s of audio"."""

from __future__ import annotations

import re

from helpers.ops import submit
from helpers.procs import narrate, wait_for_job

LINE = re.compile(
    r"job (\S+): (batch \d+/\d+(?:, runaways again)?): (\d+) sentences?, (\d+) frames in [\d.]+ s "
    r"\(([\d.]+) frames/s\), ([\d.]+) s of audio(.*?); (\d+)/(\d+) sentences done"
)


def test_a_batch_that_ran_to_its_cap_logs_its_real_frames(env, home, voice_wav, external_redis):
    doc = home / "book.txt"
    doc.write_text("One short line. Another short line. A third short line.")
    job_id = submit(env, doc, voice_wav, home / "out" / "book.wav")  # NARRATE_MAX_FRAMES=6: every row runs to 6
    proc = narrate(env, "worker", "--burst")
    assert proc.returncode == 0, proc.stderr[-3000:]
    st = wait_for_job(job_id)
    assert st["status"] == "finished", st
    lines = [m.groups() for m in map(LINE.search, proc.stderr.splitlines()) if m]
    assert [g[1] for g in lines] == ["batch 1/1", "batch 1/1, runaways again"], proc.stderr[-3000:]
    first, again = lines
    assert int(first[2]) == 3 and int(first[3]) == 3 * 6, first  # 3 rows of 6 frames each, all dropped
    assert float(first[5]) == round(3 * 6 * 1920 / 24_000, 1) and float(first[4]) > 0, first
    assert "3 runaways (no end within the budget) to synthesize again" in first[6], first
    assert int(again[3]) == 3 * 6 and float(again[5]) > 0, again  # the retry is kept: its frames are the book's
    assert sum(st["result"]["frames"]) == 3 * 6
