"""The worker's batch log lines (jobs/task/batch_log.py) in this process: runaways and their retry
named as such."""

from __future__ import annotations

import logging

from narrate.jobs.task.batch_log import BatchLog


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
