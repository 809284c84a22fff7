"""A full disk during a checkpoint or the final encode."""

from __future__ import annotations

from helpers.books import book
from helpers.fake import fake_env, synthesized
from helpers.faults import leftovers
from helpers.ops import submit
from helpers.procs import burst_worker_with_file_limit, narrate, wait_for_job

N = 40


def test_disk_full_fails_cleanly_then_resumes(env, home, voice_wav, external_redis):
    """A file-size limit (EFBIG) during the final encode, then during a checkpoint: the job
    fails naming the OS error, leaves no partial output and no temp file; once the limit is gone
    `narrate resume` finishes it from its checkpoints."""
    e = fake_env(env, home)
    for limit, where in ((200_000, "encode"), (30_000, "checkpoint")):
        doc = home / f"{where}.txt"
        doc.write_text(book(N, where))
        out = home / "out" / f"{where}.wav"
        job_id = submit(e, doc, voice_wav, out)

        proc = burst_worker_with_file_limit(e, limit)
        assert proc.returncode == 0, proc.stderr
        st = wait_for_job(job_id)
        assert st["status"] == "failed" and "File too large" in st["error"], (where, st)
        assert not out.exists() and leftovers(home) == [], leftovers(home)
        before = len(synthesized(home))
        assert narrate(e, "resume", job_id).returncode == 0
        assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
        st = wait_for_job(job_id)
        assert st["status"] == "finished" and out.exists()
        if where == "encode":  # every sentence was checkpointed before the encode failed
            assert st["result"]["synthesized"] == 0 and len(synthesized(home)) == before
