"""What narrate leaves in NARRATE_HOME: the liveness files of supervisors that were killed are
swept when a supervisor starts; the checkpoint store removes a shard folder once it is empty,
without breaking a writer that is creating a file in it at that moment."""

from __future__ import annotations

import subprocess
import sys

from helpers.fake import fake_env
from helpers.procs import narrate, start_worker, stop_worker, wait_until


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_supervisor_sweeps_the_progress_files_of_dead_supervisors(env, home, tmp_path):
    e = fake_env(env, home)
    live = start_worker(e)  # a running supervisor: its file stays
    other = subprocess.Popen(["sleep", "60"])  # alive, but not a narrate supervisor
    try:
        mine = home / f"worker-{live.pid}.progress"
        wait_until(mine.exists, 60, "the live supervisor's progress file")
        stale = [
            home / f"worker-{dead_pid()}.progress",
            home / f"worker-{dead_pid()}.tmp",
            home / f"worker-{other.pid}.progress",
        ]
        for path in stale:
            path.write_text("busy 1.0 1\n")
        unrelated = home / "worker-notes.progress"  # not a liveness file name: left alone
        unrelated.write_text("x")
        burst = narrate(dict(e, NARRATE_LOCK_PATH=str(tmp_path / "other.lock")), "worker", "--burst", "--quiet")
        assert burst.returncode == 0, burst.stderr
        assert [p for p in stale if p.exists()] == []
        assert mine.exists() and unrelated.exists()
    finally:
        other.kill()
        stop_worker(live)
    assert not mine.exists()  # a supervisor that stops removes its own
