"""Submitting: duplicates give one job, --wait follows it, status prints it."""

from __future__ import annotations

import json
import threading

from helpers.books import book
from helpers.fake import fake_env, synthesized
from helpers.ops import submit_book
from helpers.procs import narrate, start_worker, stop_worker, wait_for_job


def test_duplicate_submits_give_one_job(env, home, voice_wav, external_redis):
    """The same document with the same settings, twice at once and again later: one job."""
    e = fake_env(env, home)
    doc = home / "dup.txt"
    doc.write_text(book(8))
    args = ["submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "dup.wav"), "--json"]
    results = [None, None]

    def go(k):
        results[k] = narrate(e, *args)

    threads = [threading.Thread(target=go, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    infos = [json.loads(r.stdout) for r in results]
    assert infos[0]["id"] == infos[1]["id"]
    assert sorted(str(i["duplicate"]) for i in infos) == ["None", "queued"]
    assert external_redis.llen("rq:queue:narrate") == 1
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    again = narrate(e, *args[:-1])
    assert again.returncode == 0 and "already done" in again.stderr
    assert again.stdout.strip() == infos[0]["id"]
    assert len(synthesized(home)) == 8


def test_submit_wait_and_status_text(env, home, voice_wav):
    """`submit --wait` follows the job and prints the output (exit 0), or the error (exit 1)."""
    e = fake_env(env, home, NARRATE_FAKE_FAIL_ON="BROKEN", NARRATE_MAX_ATTEMPTS="1")
    worker = start_worker(e)
    try:
        good = home / "good.txt"
        good.write_text(book(6))
        out = home / "out" / "good.mp3"
        proc = narrate(e, "submit", str(good), "--voice", str(voice_wav), "-o", str(out), "--wait")
        assert proc.returncode == 0, proc.stderr
        job_id, path = proc.stdout.split()
        assert path == str(out) and out.exists() and "finished: 6/6 sentences" in proc.stderr
        st = narrate(e, "status", job_id)
        assert st.returncode == 0 and f"{job_id}: finished (6/6 sentences)" in st.stdout and str(out) in st.stdout
        bad = home / "bad.txt"
        bad.write_text(book(9, "BROKEN"))
        proc = narrate(e, "submit", str(bad), "--voice", str(voice_wav), "-o", str(home / "out" / "b.mp3"), "--wait")
        assert proc.returncode == 1 and "failed: SynthesisError: synthesis failed on sentence(s)" in proc.stderr
    finally:
        stop_worker(worker)


def test_stored_documents_and_voices_expire_with_their_jobs(env, home, voice_wav, external_redis):
    """Documents and voices are kept as long as the jobs that use them (NARRATE_KEEP_DAYS plus the
    job's timeout), then go: the server does not grow with every document."""
    e = fake_env(env, home, NARRATE_KEEP_DAYS="2")
    job_id = submit_book(e, home, voice_wav, book(3), name="kept")
    stored = sorted(k.decode() for k in external_redis.keys("narrate:*") if b":output" not in k)  # outputs' records
    assert [k.split(":")[1] for k in stored] == ["doc", "voice"], stored
    ttls = [external_redis.ttl(k) for k in stored]
    assert all(2 * 86400 < t <= 2 * 86400 + 3600 for t in ttls), ttls
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job_id)["status"] == "finished"
    assert 0 < external_redis.ttl(f"rq:job:{job_id}") <= 2 * 86400
    assert all(2 * 86400 < external_redis.ttl(k) <= 2 * 86400 + 3600 for k in stored)
