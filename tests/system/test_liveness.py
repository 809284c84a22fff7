"""Liveness in a stranger's hands: a laptop that sleeps, two machines with one host name, an
unusable lock path, `narrate run` beside a running worker or stopped by a signal."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from helpers.books import book
from helpers.fake import fake_env, synthesized, wait_synthesized
from helpers.ops import submit_book
from helpers.procs import NARRATE, narrate, wait_for_job, wait_until


def start_group(env: dict, *args: str) -> subprocess.Popen:
    """`narrate ARGS` in its own process group (so the whole group can be stopped, as in a sleep)."""
    return subprocess.Popen(
        [*NARRATE, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def end_group(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    return out or ""


def test_a_sleeping_laptop_does_not_get_its_job_failed(env, home, voice_wav):
    """Stopping the whole worker group for longer than the hang timeout (what a suspended machine
    looks like to the processes) twice: nothing is killed as hung, the job finishes once."""
    e = fake_env(env, home, delay_ms=100, NARRATE_HANG_TIMEOUT="3")
    n = 40  # stopped after 8 and 16 sentences: the job is mid-way at both stops
    job_id = submit_book(e, home, voice_wav, book(n))
    group = start_group(e, "worker")
    try:
        for k in range(2):
            wait_synthesized(home, 8 * (k + 1))
            os.killpg(group.pid, signal.SIGSTOP)
            time.sleep(5)  # longer than the hang timeout
            os.killpg(group.pid, signal.SIGCONT)
        st = wait_for_job(job_id, timeout=120)
    finally:
        log = end_group(group)
    assert st["status"] == "finished", (st, log[-2000:])
    assert "made no progress" not in log and "restarting" not in log, log[-2000:]
    assert st["result"]["attempts"] == 1
    assert sorted(i for i, _ in synthesized(home)) == list(range(n))


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0 or not shutil.which("unshare"),
    reason="needs Linux mount namespaces (root) to stand in for a second machine",
)
def test_two_machines_with_one_host_name_never_run_one_job_twice(env, home, voice_wav, external_redis, tmp_path):
    """A second machine is a worker in its own mount namespace: same host name, same lock path, its
    own home. It must not take the first machine's running job for abandoned."""
    lock_dir = tmp_path / "lockdir"
    lock_dir.mkdir()
    e = fake_env(env, home, delay_ms=100, NARRATE_LOCK_PATH=str(lock_dir / "host.lock"))
    job_id = submit_book(e, home, voice_wav, book(100), name="shared")
    first = start_group(e, "worker")
    try:
        wait_synthesized(home, 4)
        script = f"mount -t tmpfs tmpfs {lock_dir} && exec {sys.executable} -m narrate.cli.main worker"
        other_home = tmp_path / "other-home"
        other = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
            env=dict(e, NARRATE_HOME=str(other_home)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            wait_until(lambda: external_redis.scard("rq:workers") >= 2, 60, "the second machine's worker")
            from narrate.jobs.api import submit as api

            # it is up while the job runs (else this tests nothing)
            assert api.status(external_redis, job_id)["status"] == "started"
            st = wait_for_job(job_id, timeout=120)
        finally:
            other_log = end_group(other)
    finally:
        end_group(first)
    assert st["status"] == "finished"
    assert "Listening on" in other_log, other_log[-2000:]  # the second machine's worker did run
    assert "requeued abandoned" not in other_log, other_log[-2000:]
    indices = [i for i, _ in synthesized(home)]
    assert sorted(indices) == list(range(100)), "a sentence was synthesized twice: the job ran twice"


def test_an_unusable_lock_path_is_one_line_and_no_restart_loop(env, home, tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("keep me\n")
    link = tmp_path / "narrate.lock"
    link.symlink_to(target)
    e = dict(env, NARRATE_LOCK_PATH=str(link))
    proc = narrate(e, "worker", timeout=30)
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, err)
    assert err.startswith("Error: cannot use the host lock") and "symlink" in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert target.read_text() == "keep me\n"
    proc = narrate(dict(env, NARRATE_LOCK_PATH=str(tmp_path / "missing-dir" / "x.lock")), "worker", timeout=30)
    assert proc.returncode == 2 and proc.stderr.startswith("Error: cannot use the host lock"), proc.stderr


def test_an_existing_home_is_made_private(env, home):
    home.chmod(0o755)
    proc = narrate(dict(env, NARRATE_LOCK_PATH=str(home / "missing" / "x.lock")), "worker", timeout=30)
    assert proc.returncode == 2
    assert home.stat().st_mode & 0o777 == 0o700


def run_queues(home) -> list[str]:
    import redis

    r = redis.Redis(unix_socket_path=str(home / "valkey.sock"))
    return sorted(k.decode() for k in r.keys("rq:*narrate-run-*")) + sorted(
        m.decode() for m in r.smembers("rq:queues") if b"narrate-run-" in m
    )


def run_jobs(home) -> list[str]:
    import redis

    r = redis.Redis(unix_socket_path=str(home / "valkey.sock"))
    return sorted(k.decode() for k in r.keys("rq:job:*"))


def test_run_says_whom_it_waits_for_and_cleans_up_on_sigterm(env, home, voice_wav):
    """`narrate run --here` while a worker holds the host lock names that worker's PID; SIGTERM then
    leaves no private queue and no job behind. (Without --here the job is handed to that worker:
    test_run_handoff.py.)"""
    e = fake_env(env, home, delay_ms=50)
    worker = start_group(e, "worker")
    try:
        wait_until(lambda: (home / "host.lock.owner").exists(), 30, "the worker to hold the host lock")
        holder = (home / "host.lock.owner").read_text()
        doc = home / "run.txt"
        doc.write_text(book(6))
        run = subprocess.Popen(
            [*NARRATE, "run", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "run.wav"), "--here"],
            env=e,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until(lambda: run_queues(home), 30, "the private queue")
        time.sleep(1.0)
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=30)
        leftover = run_queues(home) + run_jobs(home)
    finally:
        end_group(worker)
    assert "waiting for the host lock" in err and holder.split(":")[0] in err, err
    assert run.returncode != 0 and "interrupted" in err, err
    assert leftover == [], leftover
    assert not (home / "out" / "run.wav").exists()


def test_run_leaves_no_private_queue_behind(env, home, voice_wav):
    e = fake_env(env, home)
    doc = home / "once.txt"
    doc.write_text(book(3))
    proc = narrate(e, "run", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "once.wav"))
    assert proc.returncode == 0, proc.stderr
    from narrate.jobs.server.connection import Connection
    from narrate.jobs.settings import Settings

    with Connection(Settings.from_env()):  # the server comes back from its AOF
        assert run_queues(home) == []
