"""One book across many hosts: 3 worker processes, each with its own host identity, NARRATE_HOME, lock
and output directory (no shared disk), one Redis. The book's chapters run as part jobs on any host,
their audio travels through Redis, and the book's own job stitches an output sample-identical to a
single-worker render; a host killed (-9, supervisor and worker) mid-part is taken over by another."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

from helpers.books import book
from helpers.fake import fake_env, synthesized
from helpers.faults import golden
from helpers.ops import submit
from helpers.procs import child_pid, narrate, start_worker, stop_worker, wait_for_job, wait_until
from helpers.servers import external_redis_url
from narrate.jobs.api import submit as api
from narrate.jobs.fanout import partaudio
from narrate.jobs.fanout.split import Part
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

CHAPTERS, PER_CHAPTER = 4, 10


def chaptered_book() -> str:
    body = book(CHAPTERS * PER_CHAPTER).split("\n\n")  # paragraphs of five sentences
    per = PER_CHAPTER // 5
    return "\n\n".join(f"Chapter {c + 1}\n\n" + "\n\n".join(body[c * per : (c + 1) * per]) for c in range(CHAPTERS))


def host_env(env: dict, redis_url: str, delay_ms: int, fetch_max_mb: str = "2048") -> tuple[dict, Path]:
    h = Path(tempfile.mkdtemp(prefix="fh-", dir="/tmp"))
    (h / "out").mkdir()
    e = fake_env(
        env,
        h,
        delay_ms=delay_ms,
        NARRATE_HOME=str(h),
        NARRATE_LOCK_PATH=str(h / "host.lock"),
        NARRATE_OUTPUT_DIR=str(h / "out"),
        NARRATE_REDIS_URL=redis_url,
        NARRATE_HEARTBEAT_S="1",
        NARRATE_ABANDONED_GRACE_S="2",
        NARRATE_SCHEDULER_INTERVAL_S="0.5",
        NARRATE_FETCH_MAX_MB=fetch_max_mb,
    )
    return e, h


def host0_part(r, st: dict, host0: Path) -> tuple[Job, Part]:
    """The part host 0 is working on: started, holding the last sentence it synthesized."""
    last = synthesized(host0)[-1][0]
    for p in st["parts"]:
        job = Job.fetch(p["id"], connection=r, serializer=JSONSerializer)
        part = Part.from_json(job.args[1])
        if part.first <= last < part.end and job.get_status() == JobStatus.STARTED:
            return job, part
    raise AssertionError(f"no started part holds sentence {last}")


def run_book(
    env, home, voice_wav, redis_url: str, fault: str | None, delay_ms: int = 60, fetch_max_mb: str = "2048"
) -> dict:
    text = chaptered_book()
    e = fake_env(env, home, delay_ms=delay_ms)
    want = golden(dict(e, NARRATE_FAKE_DELAY_MS="0"), home, voice_wav, text)  # one worker, no fan-out; same tones
    hosts = [host_env(env, redis_url, delay_ms, fetch_max_mb) for _ in range(3)]
    doc = home / "book.txt"
    doc.write_text(text)
    job_id = submit(e, doc, voice_wav, Path("book.wav"), "--fan-out", "chapters")
    with Connection(Settings.from_env()) as conn:  # holds the embedded server until the workers are gone
        workers = [start_worker(he, "--quiet") for he, _ in hosts]  # quiet: no pipe fills up unread
        try:
            st = api.status(conn.redis, job_id)
            assert len(st["parts"]) == CHAPTERS and st["status"] == "queued", st
            killed, woke = None, None
            if fault:  # a whole host dies (or sleeps) mid-part: its supervisor and its worker
                host0 = hosts[0][1]
                wait_until(lambda: len(synthesized(host0)) >= 3, 60, "host 0 synthesizing", poll=0.02)
                info = child_pid(host0, workers[0])
                sig = signal.SIGKILL if fault == "kill" else signal.SIGSTOP
                os.kill(workers[0].pid, sig)
                os.kill(info[1], sig)
                killed = len(synthesized(host0))
            if fault == "sleep":  # it wakes once another host has started its part
                part_job, part = host0_part(conn.redis, st, host0)
                asleep = part_job.worker_name

                def started_elsewhere() -> bool:
                    j = Job.fetch(part_job.id, connection=conn.redis, serializer=JSONSerializer)
                    return j.get_status() == JobStatus.FINISHED or (
                        j.get_status() == JobStatus.STARTED and j.worker_name != asleep
                    )

                wait_until(started_elsewhere, 60, "host 0's part taken over")
                woke = sum(part.first <= i < part.end for i, _ in synthesized(host0))
                os.kill(info[1], signal.SIGCONT)
                os.kill(workers[0].pid, signal.SIGCONT)
            wait_until(lambda: api.status(conn.redis, job_id)["status"] in ("finished", "failed"), 120, "book done")
            st = api.status(conn.redis, job_id)
            assert st["status"] == "finished", st
            assert conn.redis.exists(partaudio.audio_key(job_id)) == 0  # deleted after the stitch
            part_hosts = [wait_for_job(p["id"], timeout=5)["result"]["host"] for p in st["parts"]]
            fetched = home / "fetched.wav"  # through Redis from the host that stitched it
            proc = narrate(e, "fetch", job_id, "-o", str(fetched), "--via-redis")
        finally:
            for w in workers:  # all at once: each finishes its batch and deregisters
                if w.poll() is None:
                    w.send_signal(signal.SIGTERM)
            logs = [stop_worker(w, sig=0) if w.poll() is None else "" for w in workers]
    out = Path(st["output"])
    assert out.read_bytes() == want, logs  # sample-identical to the single-worker render
    assert any(str(out).startswith(str(h)) for _, h in hosts)  # landed on a host's own output dir
    if fetch_max_mb != "2048":  # the stitching host refuses: too large for the cap; nothing written
        assert proc.returncode == 1 and "more than NARRATE_FETCH_MAX_MB" in proc.stderr, proc.stderr
        assert not fetched.exists() and not list(home.glob(".fetched.wav.*"))
    else:
        assert proc.returncode == 0 and "through Redis" in proc.stdout, proc.stderr
        assert fetched.read_bytes() == want
    synth = sum(len(synthesized(h)) for _, h in hosts)
    figures = {
        "parts_hosts": len(set(part_hosts)),
        "synthesized": synth,
        "sentences": st["result"]["sentences"],
        "killed_after": killed,
        "per_host": [len(synthesized(h)) for _, h in hosts],
        "host0_log": logs[0],
        "taken_over": [ln for lg in logs for ln in lg.splitlines() if "stopped beating" in ln],
    }
    if fault == "sleep":  # of the part it slept in, what host 0 synthesized after it woke
        figures["after_waking"] = sum(part.first <= i < part.end for i, _ in synthesized(hosts[0][1])) - woke
    for _, h in hosts:
        shutil.rmtree(h, ignore_errors=True)
    return figures


def test_book_fans_out_over_three_hosts_and_a_dead_host_is_taken_over(env, home, voice_wav, external_redis):
    """External Redis: a 4-chapter book over 3 hosts; host 0 is killed -9 mid-part; the book finishes,
    sample-identical, with parts done by at least 2 hosts; at most the unsent sentences are redone."""
    f = run_book(env, home, voice_wav, external_redis_url(), fault="kill")
    print("\nfan-out figures:", json.dumps({k: v for k, v in f.items() if k != "host0_log"}))
    assert f["parts_hosts"] >= 2
    # redone: what host 0 had synthesized but not sent (a chunk of 4) and its batch in flight (4)
    assert f["synthesized"] - f["sentences"] <= 8, f


def test_a_host_that_sleeps_mid_part_stops_it_when_it_wakes(env, home, voice_wav, external_redis):
    """Host 0 is stopped (SIGSTOP: a laptop's lid closed) mid-part until another host has started
    that part: woken, it ends its batch in flight and leaves the part alone (no status, progress or
    audio of its own in it); the book is sample-identical."""
    f = run_book(env, home, voice_wav, external_redis_url(), fault="sleep")
    print("\nfan-out figures:", json.dumps({k: v for k, v in f.items() if k != "host0_log"}))
    assert "is another worker's now" in f["host0_log"], f["host0_log"][-3000:]
    assert f["after_waking"] <= 4, f  # at most its batch in flight (4); before, it ran the part to its end
    assert f["synthesized"] - f["sentences"] <= 8, f


def test_book_fans_out_on_the_embedded_server(env, home, voice_wav):
    """The embedded server (reached by the other hosts through its socket): no fault, identical output;
    `fetch` of an output over the cap, or of an unknown job, is a one-line error."""
    assert narrate(env, "info").returncode == 0  # starts the embedded server in the submitter's home
    f = run_book(env, home, voice_wav, f"unix://{home / 'valkey.sock'}", None, delay_ms=20, fetch_max_mb="0.01")
    proc = narrate(env, "fetch", "narrate-0123456789abcdef0123456789abcdef", "-o", str(home / "x.wav"))
    assert proc.returncode == 1 and "wrong id, or it expired" in proc.stderr, proc.stderr
    assert f["parts_hosts"] >= 2
    assert f["synthesized"] == f["sentences"]


def test_failed_part_fails_the_book_and_resume_reruns_only_it(env, home, voice_wav):
    """One host (burst workers): a part that fails fails its book with the part's error; `list` shows
    the book once; `resume BOOK` reruns only the failed part; `cancel BOOK` cancels its parts too. Over
    the Redis cap, only the parts that fit are fanned out (a warning) and the book job does the rest."""
    text = chaptered_book().replace("Sentence number 7 ", "Sentence number 7 poison ")
    e = fake_env(
        env, home, delay_ms=0, NARRATE_MAX_ATTEMPTS="1", NARRATE_FANOUT_MAX_MB="8"
    )  # 3 chapters fit (~2.4 MB each)
    doc = home / "book.txt"
    doc.write_text(text)
    proc = narrate(e, "submit", str(doc), "--voice", str(voice_wav), "-o", "book.wav", "--fan-out", "chapters")
    assert proc.returncode == 0 and "would not fit in NARRATE_FANOUT_MAX_MB=8 " in proc.stderr, proc.stderr
    job_id = proc.stdout.strip()
    assert narrate(dict(e, NARRATE_FAKE_FAIL_ON="poison"), "worker", "--burst", "--quiet").returncode == 0
    st = json.loads(narrate(e, "status", job_id, "--json").stdout)
    assert st["status"] == "failed" and st["error"].startswith("part 0"), st
    assert len(st["parts"]) == 3  # the last chapter is the book job's own (the Redis cap)
    rows = [json.loads(line) for line in narrate(e, "list", "--json").stdout.splitlines()]
    assert [row["id"] for row in rows] == [job_id] and rows[0]["status"] == "failed"
    before = len(synthesized(home))
    assert narrate(e, "resume", job_id).returncode == 0
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = json.loads(narrate(e, "status", job_id, "--json").stdout)
    assert st["status"] == "finished", st
    redone = [i for i, _ in synthesized(home)[before:]]
    tail = [i for i in redone if i >= 33]  # the last chapter, synthesized by the book job
    assert tail == list(range(33, 44)) and st["result"]["synthesized"] == 11, (redone, st["result"])
    redone = redone[: len(redone) - len(tail)]
    assert redone and max(redone) < st["parts"][0]["total"], redone  # only the failed part's missing sentences
    again = submit(e, doc, voice_wav, Path("other.wav"), "--fan-out", "2")  # another output: another book
    said = narrate(e, "cancel", again).stdout
    assert "parts canceled" in said, said
    st = json.loads(narrate(e, "status", again, "--json").stdout)
    assert st["status"] == "canceled" and {p["status"] for p in st["parts"]} == {"canceled"}, st


def test_real_engine_fanned_out_book_is_sample_identical(env, home, voice_wav):
    """The tiny random-weight Qwen3-TTS: parts + stitch give the same samples as one job."""
    text = "Chapter 1\n\nThe first line. A second one.\n\nChapter 2\n\nThe last line here."
    e = dict(env, NARRATE_CACHE_MAX_GB="0")  # every job deletes its checkpoints: nothing is reused
    (home / "one.txt").write_text(text)
    (home / "many.txt").write_text(text)
    one = submit(e, home / "one.txt", voice_wav, Path("one.wav"), "--fan-out", "none")
    many = submit(e, home / "many.txt", voice_wav, Path("many.wav"), "--fan-out", "chapters")
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0  # one model load for both books
    a, b = (json.loads(narrate(e, "status", j, "--json").stdout) for j in (one, many))
    assert a["status"] == b["status"] == "finished" and len(b["parts"]) == 2, (a, b)
    assert a["result"]["synthesized"] == b["result"]["sentences"]
    assert Path(b["output"]).read_bytes() == Path(a["output"]).read_bytes()
