"""`narrate submit` says when no worker takes jobs from the queue the job waits on (once, on stderr;
not for a job scheduled for later)."""

from __future__ import annotations

from helpers.books import book
from helpers.procs import narrate


def test_submit_without_a_worker_says_the_job_waits_for_one(env, home, voice_wav):
    doc = home / "book.txt"
    doc.write_text(book(3))
    ran = narrate(env, "submit", str(doc), "--voice", str(voice_wav))
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.count("no worker is taking jobs from queue 'narrate' now") == 1, ran.stderr
    assert "`narrate worker`" in ran.stderr
    later = home / "later.txt"
    later.write_text(book(2, "later"))
    ran = narrate(env, "submit", str(later), "--voice", str(voice_wav), "--in", "1h")
    assert ran.returncode == 0 and "no worker" not in ran.stderr, ran.stderr
