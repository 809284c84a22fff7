"""Damaged sentence checkpoints are detected by their body checksum and synthesized again, never
stitched into the book: unit tests of the store, and a real worker process end to end."""

from __future__ import annotations

from helpers.books import book
from helpers.fake import fake_env, synthesized
from helpers.ops import submit
from helpers.procs import burst_worker_with_file_limit, narrate, wait_for_job

N = 12


def flip_body_byte(path, back: int = 100) -> None:
    """Invert one byte near the end of a checkpoint: always in the PCM body, never the header."""
    raw = bytearray(path.read_bytes())
    raw[-back] ^= 0xFF
    path.write_bytes(bytes(raw))


def run_golden(e, home, voice, text) -> bytes:
    doc = home / "golden.txt"
    doc.write_text(text)
    out = home / "out" / "golden.wav"
    job_id = submit(e, doc, voice, out)
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job_id)["status"] == "finished"
    return out.read_bytes()


def test_resume_redoes_a_damaged_checkpoint_and_only_it(env, home, voice_wav, external_redis):
    e = fake_env(env, home, NARRATE_CACHE_MAX_GB="0")  # no cache: the second job synthesizes again
    text = book(N)
    golden = run_golden(e, home, voice_wav, text)
    assert not list((home / "checkpoints").rglob("*.seg"))  # a finished job discards its checkpoints
    (home / "fake.log").unlink()

    doc = home / "book.txt"
    doc.write_text(text)
    out = home / "out" / "book.wav"
    job_id = submit(e, doc, voice_wav, out)

    proc = burst_worker_with_file_limit(e, 200_000)  # the output encode hits it; the checkpoints are smaller
    assert proc.returncode == 0, proc.stderr
    st = wait_for_job(job_id)
    assert st["status"] == "failed" and "File too large" in st["error"], st
    assert sorted(i for i, _ in synthesized(home)) == list(range(N))
    segs = sorted((home / "checkpoints").rglob("*.seg"))
    assert len(segs) == N
    flip_body_byte(segs[0])

    assert narrate(e, "resume", job_id).returncode == 0
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(job_id)
    assert st["status"] == "finished", st
    redone = [i for i, _ in synthesized(home)[N:]]
    assert len(redone) == 1 and st["result"]["synthesized"] == 1, redone
    assert out.read_bytes() == golden  # the damage did not reach the book
