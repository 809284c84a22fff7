"""`narrate watch JOB` / `narrate status JOB --follow`: a progress line (sentences, audio seconds,
realtime factor, ETA) redrawn until the job ends; exit 0 only when it finished. Job meta progress
carries `realtime_factor` and `eta_seconds`, which `status --json` shows."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import threading

from helpers.books import write_docs
from helpers.fake import fake_env
from helpers.ops import one_error_line, submit_json
from helpers.procs import NARRATE, narrate, start_worker, stop_worker, wait_for_job, wait_until


def test_watch_follows_a_job_to_its_end(env, home, voice_wav, external_redis):
    hold = home / "hold"  # the fake engine waits after its first batch while this file exists
    hold.touch()
    e = fake_env(env, home, delay_ms=20, NARRATE_FAKE_HOLD_FILE=str(hold))
    [job] = submit_json(e, write_docs(home, {"w.txt": 24}), voice_wav, "-o", str(home / "out"))
    seen: list[dict] = []
    worker = start_worker(e)
    try:

        def running() -> bool:
            st = json.loads(narrate(e, "status", job["id"], "--json").stdout)
            seen.append(st["progress"])
            return st["status"] == "started" and st["progress"]["eta_seconds"] is not None

        wait_until(running, 60, "progress with an ETA")
        # Both followers start mid-job, and the job goes on once each has drawn a line of it.
        cmds = ([*NARRATE, "status", job["id"], "--follow"], [*NARRATE, "watch", job["id"]])
        pipe = subprocess.PIPE
        followers = [subprocess.Popen(c, env=e, stdout=pipe, stderr=pipe, text=True) for c in cmds]
        lines: list[list[str]] = [[], []]
        readers = [
            threading.Thread(target=lambda p=p, got=got: got.extend(p.stdout), daemon=True)
            for p, got in zip(followers, lines, strict=True)
        ]
        for t in readers:
            t.start()
        wait_until(lambda: all(got for got in lines), 60, "a progress line from each follower")
        hold.unlink()
        ends = [(p.wait(timeout=60), p.stderr.read()) for p in followers]
        for t in readers:
            t.join(timeout=10)
    finally:
        hold.unlink(missing_ok=True)
        stop_worker(worker)
    p = seen[-1]
    assert p["realtime_factor"] > 0 and p["eta_seconds"] > 0 and 0 < p["done"] < 24 and p["audio_seconds"] > 0
    for got, (rc, err) in zip(lines, ends, strict=True):
        got = [x.rstrip("\n") for x in got]
        assert rc == 0, (got, err)
        assert any("started · " in x and "x realtime · ETA " in x and " s audio" in x for x in got), got
        assert got[-2].startswith("finished · 24/24 sentences (100%)") and got[-1].startswith("output: ")
    st = json.loads(narrate(e, "status", job["id"], "--json").stdout)
    assert st["progress"]["eta_seconds"] == 0 and st["progress"]["realtime_factor"] > 0


def test_watch_exits_non_zero_unless_finished(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=40, NARRATE_FAKE_FAIL_ON="BROKEN", NARRATE_MAX_ATTEMPTS="1")
    bad = home / "bad.txt"
    bad.write_text("This one is BROKEN.")
    [failing] = submit_json(e, [bad], voice_wav, "-o", str(home / "out"))
    [long] = submit_json(e, write_docs(home, {"long.txt": 40}), voice_wav, "-o", str(home / "out"))
    assert narrate(e, "cancel", long["id"]).returncode == 0
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    line = one_error_line_of(narrate(e, "watch", failing["id"]))
    assert line.startswith(f"Error: job {failing['id']} failed: SynthesisError"), line
    canceled = narrate(e, "watch", long["id"])
    assert canceled.returncode == 1 and canceled.stdout.startswith("canceled · 0/40 sentences")
    assert f"narrate resume {long['id']} continues it" in canceled.stderr
    assert "no job 'narrate-nope'" in one_error_line(narrate(e, "watch", "narrate-nope"))


def one_error_line_of(proc) -> str:
    assert proc.returncode == 1, proc
    [line] = proc.stderr.strip().splitlines()
    return line


def test_on_a_terminal_the_line_is_redrawn_in_place(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=20)
    [job] = submit_json(e, write_docs(home, {"t.txt": 12}), voice_wav, "-o", str(home / "out"))
    main, sub = pty.openpty()
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(main, 4096)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    watch = subprocess.Popen([*NARRATE, "watch", job["id"]], env=e, stdout=sub, stderr=subprocess.PIPE)
    os.close(sub)
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert watch.wait(timeout=30) == 0
    assert wait_for_job(job["id"])["status"] == "finished"
    reader.join(timeout=5)
    os.close(main)
    text = b"".join(chunks).decode()
    assert "\r" in text and "\x1b[K" in text and "finished · 12/12 sentences" in text, text
