"""Fault tests: real worker processes, real signals, real Redis/Valkey servers. The deterministic
fake engine (NARRATE_ENGINE=fake) keeps them fast; the kill -9 test also runs on the real
engine. A fault-free run gives the golden output that every faulty run must match byte for byte."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import narrate, start_worker, stop_worker, wait_for_job
from faults import (
    PrivateRedis,
    book,
    child_pid,
    fake_env,
    job_meta,
    kill_loop,
    percentile,
    submit,
    submit_book,
    synthesized,
    wait_synthesized,
)
from narrate.jobs import api
from narrate.jobs.connection import Connection
from narrate.jobs.settings import Settings

N = 40
KILLS = int(os.environ.get("NARRATE_TEST_KILLS", "5"))


def leftovers(home) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.name.endswith((".tmp", ".partial.wav")) or ".partial." in p.name]


def golden(env, home, voice, text, name="golden.wav") -> bytes:
    doc = home / f"{name}.txt"
    doc.write_text(text)
    out = home / "out" / name
    job_id = submit(env, doc, voice, out)
    proc = narrate(env, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert wait_for_job(job_id)["status"] == "finished"
    (home / "fake.log").unlink(missing_ok=True)
    return out.read_bytes()


def redone_per_kill(home, n_kills_log_marks: list[int]) -> list[int]:
    log = [i for i, _ in synthesized(home)]
    marks = [0, *n_kills_log_marks]
    return [len({i for i in log[a:b] if i in set(log[b:])}) for a, b in zip(marks, marks[1:], strict=False)]


@pytest.mark.parametrize("engine", ["fake", "mlx"])
def test_kill_9_at_random_moments_loses_nothing(env, home, voice_wav, engine):
    """R1: SIGKILL the worker process repeatedly mid-job; the supervisor restarts it, the job
    resumes in seconds from its checkpoints, the output is byte-identical to a fault-free run."""
    kills = KILLS if engine == "fake" else 2
    e = fake_env(env, home, delay_ms=150) if engine == "fake" else dict(env, NARRATE_BATCH_SIZE="2")
    n = int(os.environ.get("NARRATE_TEST_KILL_SENTENCES", "60")) if engine == "fake" else 8
    text = book(n)
    want = golden(e, home, voice_wav, text)
    job_id = submit_book(e, home, voice_wav, text)
    out = home / "out" / "book.wav"
    with Connection(Settings.from_env()) as conn:
        res = kill_loop(e, home, conn.redis, job_id, kills, marks := [])
        st = api.status(conn.redis, job_id)
    assert res["status"] == "finished", res["log"][-2000:]
    assert len(res["latencies"]) == kills  # every kill landed mid-job
    assert out.read_bytes() == want  # no lost, duplicated or missing sentence; not corrupt
    assert leftovers(home) == []
    figures = {
        "engine": engine,
        "kills": len(res["latencies"]),
        "lost_jobs": 0,
        "latency_p50_s": round(percentile(res["latencies"], 0.5), 2),
        "latency_p95_s": round(percentile(res["latencies"], 0.95), 2),
        "attempts": st["result"]["attempts"],
    }
    if engine == "fake":
        per_kill = redone_per_kill(home, marks)
        figures["redone_per_kill_max"] = max(per_kill)
        figures["redone_per_kill_mean"] = round(sum(per_kill) / len(per_kill), 2)
        assert max(per_kill) <= 4  # at most the batch in flight (batch size 4)
        assert res["synthesized"] - n == sum(per_kill)
    print("\nR1 figures:", json.dumps(figures))
    assert percentile(res["latencies"], 0.95) <= (5 if engine == "fake" else 20)


def test_poison_pill_fails_after_three_crashes_and_others_finish(env, home, voice_wav):
    """R5: a sentence that kills the worker every time fails its job after 3 attempts, naming it."""
    e = fake_env(env, home, NARRATE_FAKE_ABORT_ON="POISON")
    ids = []
    for name, marker in (("a", ""), ("b", "POISON"), ("c", "")):
        doc = home / f"{name}.txt"
        doc.write_text(book(12, marker))
        ids.append(submit(e, doc, voice_wav, home / "out" / f"{name}.wav"))
    supervisor = start_worker(e)
    try:
        results = [wait_for_job(i, timeout=120) for i in ids]
    finally:
        stop_worker(supervisor)
    assert [r["status"] for r in results] == ["finished", "failed", "finished"]
    err = results[1]["error"]
    assert "crashed the worker 3 times on sentences" in err and "POISON" in err, err
    poisoned = [i for i, _ in synthesized(home) if i == 7]
    assert len(poisoned) <= 3 + 2  # 3 crashing attempts on 'b' (+ sentence 7 of a and c)


def test_exception_on_a_sentence_fails_after_three_attempts(env, home, voice_wav):
    """R6: a deterministic exception: RQ retries twice, then the job fails naming the sentence."""
    e = fake_env(env, home, NARRATE_FAKE_FAIL_ON="BROKEN")
    doc = home / "bad.txt"
    doc.write_text(book(10, "BROKEN"))
    job_id = submit(e, doc, voice_wav, home / "out" / "bad.wav")
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr
    st = wait_for_job(job_id)
    assert st["status"] == "failed"
    assert "synthesis failed on sentence(s)" in st["error"] and "BROKEN" in st["error"], st["error"]
    with Connection(Settings.from_env()) as conn:
        assert job_meta(conn.redis, job_id)["attempts"] == 3
    # Sentences before the bad batch were checkpointed once and never redone.
    counts = {}
    for i, _ in synthesized(home):
        counts[i] = counts.get(i, 0) + 1
    assert all(counts[i] == 1 for i in range(4))
    assert not (home / "out" / "bad.wav").exists() and leftovers(home) == []


def test_hang_in_native_code_is_killed_by_the_supervisor(env, home, voice_wav):
    """R7: a worker stuck where no signal handler runs is killed after NARRATE_HANG_TIMEOUT."""
    e = fake_env(env, home, NARRATE_FAKE_HANG_ON="STUCK", NARRATE_HANG_TIMEOUT="2", NARRATE_MAX_ATTEMPTS="2")
    doc = home / "hang.txt"
    doc.write_text(book(10, "STUCK"))
    job_id = submit(e, doc, voice_wav, home / "out" / "hang.wav")
    t0 = time.monotonic()
    supervisor = start_worker(e)
    try:
        st = wait_for_job(job_id, timeout=60)
    finally:
        log = stop_worker(supervisor)
    assert st["status"] == "failed" and "crashed the worker 2 times" in st["error"], (st, log[-1500:])
    assert "STUCK" in st["error"]
    assert time.monotonic() - t0 < 2 * (2 + 5) + 10
    assert "made no progress" in log


def test_sigterm_finishes_the_batch_requeues_and_exits_0(env, home, voice_wav):
    """R4 (warm): SIGTERM mid-job -> the batch in flight is checkpointed, the job requeued, exit 0;
    a new worker finishes it without redoing a sentence."""
    e = fake_env(env, home, delay_ms=100)
    text = book(N)
    want = golden(e, home, voice_wav, text)
    job_id = submit_book(e, home, voice_wav, text)
    supervisor = start_worker(e)
    wait_synthesized(home, 6)
    t0 = time.monotonic()
    log = stop_worker(supervisor, signal.SIGTERM)
    assert supervisor.returncode == 0, log
    assert time.monotonic() - t0 < 0.1 * 4 + 3  # at most one batch, then out
    st = wait_for_job_state(job_id, "queued")
    done = st["progress"]["done"]
    assert 0 < done < N and done % 4 == 0  # whole batches only
    assert len(synthesized(home)) == done  # nothing synthesized was thrown away
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0
    st = wait_for_job(job_id)
    assert st["status"] == "finished" and st["result"]["synthesized"] == N - done
    assert len(synthesized(home)) == N and (home / "out" / "book.wav").read_bytes() == want


def wait_for_job_state(job_id, state, timeout=10):
    deadline = time.monotonic() + timeout
    with Connection(Settings.from_env()) as conn:
        while time.monotonic() < deadline:
            st = api.status(conn.redis, job_id)
            if st["status"] == state:
                return st
            time.sleep(0.05)
    raise AssertionError(f"job {job_id} is {st['status']}, not {state}")


def test_redis_gone_for_30_seconds_mid_job(env, home, voice_wav, monkeypatch):
    """R9: the server dies mid-job and comes back 30 s later (AOF); the worker reconnects and the
    job completes. No password in any log, job meta, result or key."""
    server = PrivateRedis()
    server.start()
    try:
        e = fake_env(env, home, delay_ms=150, NARRATE_REDIS_URL=server.url)
        monkeypatch.setenv("NARRATE_REDIS_URL", server.url)
        job_id = submit_book(e, home, voice_wav, book(24))
        supervisor = start_worker(e)
        wait_synthesized(home, 4)
        server.kill()
        outage = float(os.environ.get("NARRATE_TEST_OUTAGE_S", "30"))
        time.sleep(outage)
        server.start()
        try:
            st = wait_for_job(job_id, timeout=120)
        finally:
            log = stop_worker(supervisor)
        assert st["status"] == "finished", (st, log[-2000:])
        assert len(synthesized(home)) == 24
        secrets = [log, json.dumps(st)]
        client = server.client()
        for key in client.keys("*"):
            if client.type(key) == b"hash":
                secrets += [str(v) for v in client.hgetall(key).values()]
        assert not any(server.password in s for s in secrets)
    finally:
        server.close()


def test_disk_full_fails_cleanly_then_resumes(env, home, voice_wav, external_redis):
    """R11: a file-size limit (EFBIG) during the final encode, then during a checkpoint: the job
    fails naming the OS error, leaves no partial output and no temp file; once the limit is gone
    `narrate resume` finishes it from its checkpoints."""
    e = fake_env(env, home)
    for limit, where in ((200_000, "encode"), (30_000, "checkpoint")):
        doc = home / f"{where}.txt"
        doc.write_text(book(N, where))
        out = home / "out" / f"{where}.wav"
        job_id = submit(e, doc, voice_wav, out)

        def limited(limit=limit):
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        proc = subprocess.run(
            [sys.executable, "-m", "narrate.cli.main", "worker", "--burst", "--quiet"],
            env=e, capture_output=True, text=True, preexec_fn=limited, timeout=120,
        )  # fmt: skip
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


def test_duplicate_submits_give_one_job(env, home, voice_wav, external_redis):
    """R12: the same document with the same settings, twice at once and again later: one job."""
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


def test_two_workers_on_one_host_never_synthesize_at_once(env, home, voice_wav):
    """R13: the second worker waits for the host lock; it takes over when the first is killed."""
    e = fake_env(env, home, delay_ms=50)
    ids = []
    for k in range(2):
        doc = home / f"w{k}.txt"
        doc.write_text(book(16, f"doc{k}"))
        ids.append(submit(e, doc, voice_wav, home / "out" / f"w{k}.wav"))
    first = start_worker(e)
    while not (child_pid(home, first) or ("", 0))[0] == "busy":
        time.sleep(0.02)
    second = start_worker(e)
    time.sleep(1.0)
    pids = {pid for _, pid in synthesized(home)}
    assert len(pids) == 1  # only the lock holder synthesized
    holder = child_pid(home, first)[1]
    t_kill = time.monotonic()
    stop_worker(first, signal.SIGKILL)  # the supervisor and its worker die
    os.kill(holder, signal.SIGKILL) if _alive(holder) else None
    try:
        sts = [wait_for_job(i, timeout=60) for i in ids]
    finally:
        stop_worker(second)
    assert [s["status"] for s in sts] == ["finished", "finished"]
    assert time.monotonic() - t_kill < 30
    later = [pid for _, pid in synthesized(home)][len(pids) :]
    assert holder not in set(later[-8:])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def test_job_payloads_are_json_with_relative_paths(env, home, voice_wav, external_redis):
    """S4: every job hash holds JSON (no pickle), and its arguments hold ids and a relative path."""
    import zlib

    doc = home / "s4.txt"
    doc.write_text("Only ids travel.")
    submit(env, doc, voice_wav, home / "out" / "s4.wav")
    keys = [k for k in external_redis.keys("rq:job:*") if external_redis.type(k) == b"hash"]
    assert keys
    for key in keys:
        data = external_redis.hget(key, "data")
        payload = json.loads(zlib.decompress(data))
        assert not data.startswith(b"\x80")
        assert str(home) not in json.dumps(payload) and "/tmp" not in json.dumps(payload)


def test_embedded_server_killed_mid_job_is_recovered_after_restart(env, home, voice_wav):
    """R8: kill -9 the embedded Valkey and the worker mid-job; after a restart from the AOF the
    started job is still there, and the next worker resumes it."""
    from narrate.jobs.embedded import EmbeddedServer

    e = fake_env(env, home, delay_ms=80)
    text = book(N)
    want = golden(e, home, voice_wav, text)
    job_id = submit_book(e, home, voice_wav, text)
    supervisor = start_worker(e)
    wait_synthesized(home, 8)
    holder = child_pid(home, supervisor)[1]
    stop_worker(supervisor, signal.SIGKILL)
    os.kill(holder, signal.SIGKILL)
    os.kill(EmbeddedServer(home).server_pid(), signal.SIGKILL)
    time.sleep(1.2)  # appendfsync everysec
    with Connection(Settings.from_env()) as conn:  # restarts the server from its AOF
        assert api.status(conn.redis, job_id)["status"] == "started"
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(job_id)
    assert st["status"] == "finished" and (home / "out" / "book.wav").read_bytes() == want


def test_resume_requeues_a_job_whose_worker_is_gone(env, home, voice_wav, external_redis):
    """`narrate resume` finds started jobs whose worker stopped beating and requeues them."""
    e = fake_env(env, home, delay_ms=80)
    doc = home / "gone.txt"
    doc.write_text(book(12))
    job_id = submit(e, doc, voice_wav, home / "out" / "gone.wav")
    supervisor = start_worker(e)
    wait_synthesized(home, 4)
    holder = child_pid(home, supervisor)[1]
    stop_worker(supervisor, signal.SIGKILL)
    os.kill(holder, signal.SIGKILL)
    worker_keys = external_redis.keys("rq:worker:*")
    for k in worker_keys:  # age its heartbeat past the abandonment threshold
        if external_redis.type(k) == b"hash":
            external_redis.hset(k, "last_heartbeat", "2020-01-01T00:00:00.000000Z")
    out = narrate(e, "resume")
    assert out.returncode == 0 and f"{job_id}: requeued (its worker is gone)" in out.stdout, out.stdout
    # a worker from another host (different lock path) finishes it
    other = dict(e, NARRATE_LOCK_PATH=str(home / "other.lock"))
    assert narrate(other, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job_id)["status"] == "finished"


def test_busy_worker_keeps_beating(env, home, voice_wav, external_redis):
    """RQ's SimpleWorker sends no heartbeat during a job; narrate's worker does, so a long job's
    worker and StartedJobRegistry entry stay alive."""
    e = fake_env(env, home, delay_ms=100, NARRATE_HEARTBEAT_S="1")
    doc = home / "long.txt"
    doc.write_text(book(40))
    job_id = submit(e, doc, voice_wav, home / "out" / "long.wav")
    supervisor = start_worker(e)
    try:
        wait_synthesized(home, 2)
        seen = []
        for _ in range(3):
            [key] = [k for k in external_redis.keys("rq:worker:*") if external_redis.type(k) == b"hash"]
            beat = external_redis.hget(key, "last_heartbeat")
            score = max(s for _, s in external_redis.zrange("rq:wip:narrate", 0, -1, withscores=True))
            seen.append((beat, score))
            time.sleep(1.3)
        assert wait_for_job(job_id)["status"] == "finished"
    finally:
        stop_worker(supervisor)
    beats, scores = zip(*seen, strict=True)
    assert len(set(beats)) == 3 and list(scores) == sorted(scores) and scores[-1] > scores[0]


def test_redis_refusing_writes_is_a_clear_error(env, home, voice_wav, monkeypatch):
    """R10: a server out of memory (maxmemory, noeviction) refuses the submit: one line, exit 1,
    no job; once the limit is lifted the same submit works."""
    server = PrivateRedis()
    server.start()
    try:
        e = fake_env(env, home, NARRATE_REDIS_URL=server.url)
        client = server.client()
        client.config_set("maxmemory", "1")
        client.config_set("maxmemory-policy", "noeviction")
        doc = home / "oom.txt"
        doc.write_text(book(5))
        args = ["submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "oom.wav")]
        proc = narrate(e, *args)
        err = proc.stderr.strip()
        assert proc.returncode == 1 and err.startswith("Error: the Redis server refused:") and "maxmemory" in err, err
        assert len(err.splitlines()) == 1 and server.password not in err
        assert client.llen("rq:queue:narrate") == 0
        client.config_set("maxmemory", "0")
        assert narrate(e, *args).returncode == 0 and client.llen("rq:queue:narrate") == 1
    finally:
        server.close()


def _rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_soak_2000_sentences_flat_memory(env, home, voice_wav):
    """R14: a 2,000-sentence document: the worker's memory stays flat (checkpoints on disk,
    stitching streamed), the output length is exact, no checkpoint or temp file is left."""
    e = fake_env(env, home, delay_ms=0, NARRATE_BATCH_SIZE="16")
    e.pop("NARRATE_FAKE_LOG")
    job_id = submit_book(e, home, voice_wav, book(2000))
    supervisor = start_worker(e)
    samples = []
    try:
        while True:
            info = child_pid(home, supervisor)
            st = None
            if info and info[0] == "busy":
                samples.append(_rss_mb(info[1]))
            with Connection(Settings.from_env()) as conn:
                st = api.status(conn.redis, job_id)
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
    print(f"\nR14: RSS first busy sample {samples[0]:.0f} MB, max {max(samples):.0f} MB, growth {growth:.1f} MB")
    assert growth < 50
    assert not any((home / "checkpoints").rglob("*.seg")) and leftovers(home) == []


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


@pytest.mark.parametrize("ext", ["m4b", "mp3"])
def test_chapters_from_headings_reach_the_audiobook(env, home, voice_wav, ext):
    """Markdown headings and "Chapter ..." lines become chapters of the output file, at the
    sample where their first sentence starts."""
    import imageio_ffmpeg

    e = fake_env(env, home)
    text = (
        "Opening words come first.\n\n# The Storm\n\nRain fell. Wind rose.\n\nChapter 2\n\nMorning came. It was calm."
    )
    doc = home / "chap.md"
    doc.write_text(text)
    out = home / "out" / f"chap.{ext}"
    job_id = submit(e, doc, voice_wav, out)
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(job_id)
    chapters = st["result"]["chapters"]
    assert [c["title"] for c in chapters] == ["chap", "The Storm", "Chapter 2"]  # the opening: the book's name
    frames = st["result"]["frames"]  # sentences: opening | heading, 2 | heading, 2
    storm = (frames[0] * 1920 + 750 * 24) / 24000
    assert chapters[0]["start_seconds"] == 0 and chapters[1]["start_seconds"] == pytest.approx(storm)
    meta = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(out), "-f", "ffmetadata", "-"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    titles = [line.split("=", 1)[1] for line in meta.splitlines() if line.startswith("title=")]
    starts = [int(line.split("=")[1]) for line in meta.splitlines() if line.startswith("START=")]
    assert titles[-3:] == ["chap", "The Storm", "Chapter 2"]
    timebase = [line for line in meta.splitlines() if line.startswith("TIMEBASE=")][0].split("/")[1]
    got = [s / int(timebase) for s in starts]  # AAC priming may shift the container's times by ~43 ms
    assert got == pytest.approx([c["start_seconds"] for c in chapters], abs=0.1)
