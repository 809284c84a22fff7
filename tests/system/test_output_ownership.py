"""Who may write an output path: one pending job per path, no file narrate did not write is
replaced without --overwrite, and "already done" only for output that is the job's own."""

from __future__ import annotations

import json
import os

from helpers.books import book
from helpers.fake import fake_env
from helpers.procs import narrate, start_worker, stop_worker, wait_for_job, wait_until


def submit_to(e: dict, home, voice, name: str, text: str, out, *extra: str):
    doc = home / f"{name}.txt"
    doc.write_text(text)
    return narrate(e, "submit", str(doc), "--voice", str(voice), "-o", str(out), "--json", *extra)


def burst(e: dict) -> None:
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr


def test_two_documents_one_output_path(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    out = home / "out" / "book.wav"
    a = submit_to(e, home, voice_wav, "a", book(9, "alpha"), out)
    assert a.returncode == 0, a.stderr
    a_id = json.loads(a.stdout)["id"]
    b = submit_to(e, home, voice_wav, "b", book(9, "beta"), out)
    err = b.stderr.strip()
    assert b.returncode == 1 and err.startswith("Error: output") and f"pending job {a_id}" in err, err
    assert len(err.splitlines()) == 1 and external_redis.llen("rq:queue:narrate") == 1  # nothing enqueued for b
    worker = start_worker(e, "--quiet")  # one worker for the three jobs, each submitted once the last has ended
    try:
        assert wait_for_job(a_id)["status"] == "finished"
        a_bytes = out.read_bytes()
        # b may now replace a's output (narrate wrote it), and says so.
        b = submit_to(e, home, voice_wav, "b", book(9, "beta"), out)
        assert b.returncode == 0 and f"replaces book.wav written by job {a_id}" in b.stderr, b.stderr
        b_id = json.loads(b.stdout)["id"]
        assert wait_for_job(b_id)["status"] == "finished" and out.read_bytes() != a_bytes
        st = narrate(e, "status", a_id)
        assert f"its output was replaced since by job {b_id}" in st.stdout, st.stdout
        assert json.loads(narrate(e, "status", a_id, "--json").stdout)["output_replaced_by"] == b_id
        # a again: not "already done" (the file is b's); it is narrated again.
        again = submit_to(e, home, voice_wav, "a", book(9, "alpha"), out)
        assert again.returncode == 0 and "already done" not in again.stderr, again.stderr
        info = json.loads(again.stdout)
        assert info["id"] == a_id and info["duplicate"] is None
        assert wait_until(lambda: out.read_bytes() == a_bytes, 60, "a's output again", poll=0.1)
        assert wait_for_job(a_id)["status"] == "finished"
    finally:
        stop_worker(worker)


def test_a_file_narrate_did_not_write_needs_overwrite(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    out = home / "out" / "mine.wav"
    out.write_bytes(b"my own recording")
    out.chmod(0o444)
    proc = submit_to(e, home, voice_wav, "doc", book(3), out)
    err = proc.stderr.strip()
    assert proc.returncode == 1 and "was not written by narrate" in err and "--overwrite" in err, err
    assert external_redis.llen("rq:queue:narrate") == 0 and out.read_bytes() == b"my own recording"
    proc = submit_to(e, home, voice_wav, "doc", book(3), out, "--overwrite")
    assert proc.returncode == 0, proc.stderr
    burst(e)
    assert wait_for_job(json.loads(proc.stdout)["id"])["status"] == "finished"
    assert out.read_bytes()[:4] == b"RIFF"


def test_a_file_that_appears_while_the_job_waits_is_not_replaced(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    out = home / "out" / "late.wav"
    proc = submit_to(e, home, voice_wav, "late", book(3), out)
    assert proc.returncode == 0, proc.stderr
    job_id = json.loads(proc.stdout)["id"]
    out.write_bytes(b"written by hand meanwhile")
    burst(e)
    st = wait_for_job(job_id)
    assert st["status"] == "failed" and "was not written by narrate" in st["error"], st
    assert out.read_bytes() == b"written by hand meanwhile"
    assert not [p for p in (home / "out").iterdir() if p.name.startswith(".narrate-")]


def test_already_done_means_the_output_is_the_jobs_own(env, home, voice_wav, external_redis):
    e = fake_env(env, home)
    out = home / "out" / "same.wav"
    first = submit_to(e, home, voice_wav, "same", book(4), out)
    job_id = json.loads(first.stdout)["id"]
    burst(e)
    again = submit_to(e, home, voice_wav, "same", book(4), out)
    assert again.returncode == 0 and json.loads(again.stdout)["duplicate"] == "done", again.stderr
    with open(out, "r+b") as f:  # edited by hand since: not the job's output any more
        f.seek(os.path.getsize(out) // 2)
        f.write(b"\x00\x01\x02\x03")
    again = submit_to(e, home, voice_wav, "same", book(4), out)
    assert again.returncode == 1 and "was not written by narrate" in again.stderr, again.stderr
    again = submit_to(e, home, voice_wav, "same", book(4), out, "--overwrite")
    assert again.returncode == 0 and json.loads(again.stdout)["duplicate"] is None, again.stderr
    assert json.loads(again.stdout)["id"] != job_id  # --overwrite is part of the job
