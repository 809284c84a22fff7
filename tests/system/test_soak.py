"""A long document: flat memory, exact length."""

from __future__ import annotations

import time

from helpers.books import book
from helpers.fake import fake_env
from helpers.faults import leftovers
from helpers.ops import submit_book
from helpers.procs import child_pid, start_worker, stop_worker
from narrate.jobs.api import submit as api
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings


def _rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_soak_2000_sentences_flat_memory(env, home, voice_wav):
    """A 2,000-sentence document: the worker's memory stays flat (checkpoints on disk,
    stitching streamed), the output length is exact, no checkpoint or temp file is left. Memory is
    measured from the first sample past a tenth of the book: the loudness meter's libraries (scipy,
    about 45 MB) are imported when the book's first audio is measured, not when the process starts."""
    e = fake_env(env, home, delay_ms=0, NARRATE_BATCH_SIZE="16", NARRATE_CACHE_MAX_GB="0")
    e.pop("NARRATE_FAKE_LOG")
    job_id = submit_book(e, home, voice_wav, book(2000))
    supervisor = start_worker(e)
    samples = []
    try:
        while True:
            info = child_pid(home, supervisor)
            st = None
            rss = _rss_mb(info[1]) if info and info[0] == "busy" else None
            with Connection(Settings.from_env()) as conn:
                st = api.status(conn.redis, job_id)
            if rss is not None and st["progress"].get("done", 0) >= 200:
                samples.append(rss)
            if st["status"] in ("finished", "failed"):
                break
            time.sleep(0.2)
    finally:
        stop_worker(supervisor)
    assert st["status"] == "finished", st
    res = st["result"]
    assert res["sentences"] == 2000 and res["samples"] == sum(res["frames"]) * 1920 + (1600 * 250 + 399 * 750) * 24
    assert len(samples) >= 5
    growth = max(samples) - samples[0]
    print(f"\nsoak: RSS at a tenth of the book {samples[0]:.0f} MB, max {max(samples):.0f} MB, growth {growth:.1f} MB")
    assert growth < 50
    assert not any((home / "checkpoints").rglob("*.seg")) and leftovers(home) == []
