"""The embedded server and the state it leaves in NARRATE_HOME: narrate never signals a process it
cannot prove is the server it started for this home (a stale pidfile after a crash or a reboot,
a pidfile copied from another home), keeps the home private, refuses a home or a server that
belongs to another user, copes with homes valkey's config would misread, and CLI processes
starting the server at once share one."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from helpers.ops import one_error_line
from helpers.procs import NARRATE, exited, narrate, wait_until
from narrate.jobs.server.embedded import EmbeddedServer

OTHER_UID = 54321


def no_job(proc: subprocess.CompletedProcess) -> bool:
    """The command reached the server (and found no such job)."""
    return proc.returncode == 1 and "no job 'x'" in proc.stderr


def test_stale_pidfile_naming_another_process_is_left_alone(env, home):
    assert no_job(narrate(env, "status", "x"))  # the server started, and stopped with the last user
    sleeper = subprocess.Popen(["sleep", "1000"])  # after a reboot, any process may own that PID
    try:
        (home / "valkey.pid").write_text(f"{sleeper.pid}\n")
        proc = narrate(env, "status", "x")
        assert no_job(proc), proc.stderr
        time.sleep(0.2)
        assert sleeper.poll() is None, "narrate signalled a process that is not its server"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_pidfile_naming_the_server_of_another_home_leaves_that_server_alone(env, home):
    other = Path(tempfile.mkdtemp(prefix="nh-", dir="/tmp"))
    holder = EmbeddedServer(other)
    holder.acquire()  # the server of another NARRATE_HOME, in use
    try:
        pid = holder.server_pid()
        assert pid is not None
        (home / "valkey.pid").write_text(f"{pid}\n")  # e.g. a home copied while its server ran
        assert EmbeddedServer(home).server_pid() is None  # not this home's server
        assert no_job(narrate(env, "status", "x"))
        assert holder.is_up() and holder.server_pid() == pid
    finally:
        holder.release()
        shutil.rmtree(other, ignore_errors=True)


def test_an_existing_home_is_made_private(env, home):
    (home / "valkey").mkdir()
    for d in (home, home / "valkey"):
        os.chmod(d, 0o755)
    assert no_job(narrate(env, "status", "x"))
    for d in (home, home / "valkey"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the home to another user")
def test_a_home_of_another_user_is_refused(env, home):
    os.chown(home, OTHER_UID, OTHER_UID)
    err = one_error_line(narrate(env, "status", "x"))
    assert f"belongs to another user (uid {OTHER_UID})" in err
    assert not (home / "valkey.sock").exists() and not (home / "valkey.conf").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the socket to another user")
def test_a_server_of_another_user_is_neither_used_nor_replaced(env, home):
    holder = EmbeddedServer(home)
    holder.acquire()
    try:
        pid = holder.server_pid()
        os.chown(home / "valkey.sock", OTHER_UID, OTHER_UID, follow_symlinks=False)  # as another user's server has
        err = one_error_line(narrate(env, "status", "x"))
        assert f"another user (uid {OTHER_UID})" in err
        assert holder.is_up() and holder.server_pid() == pid  # still there, still the only one
    finally:
        holder.release()


@pytest.mark.parametrize("name", ["relative", 'a b "c"'])
def test_homes_that_a_valkey_config_would_misread(env, home, name):
    """Valkey chdirs into its data dir while reading its config, and splits config lines on
    spaces: a relative home, or one with spaces or quotes, must still work."""
    sub = home / name
    value = name if name == "relative" else str(sub)
    e = dict(env, NARRATE_HOME=value)
    try:
        proc = narrate(e, "status", "x", cwd=home, timeout=60)
        assert no_job(proc), proc.stderr
        assert (sub / "valkey.conf").exists() and not EmbeddedServer(sub).server_pid()
    finally:
        pid = EmbeddedServer(sub).server_pid()
        if pid:
            os.kill(pid, signal.SIGKILL)


def test_processes_starting_the_server_at_once_share_one(env, home):
    procs = [
        subprocess.Popen(
            [*NARRATE, "status", "x"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 1 and "no job 'x'" in err, err
    log = (home / "valkey.log").read_text()
    assert "Address already in use" not in log and "FATAL" not in log.upper().replace("FATAL_", "")
    assert EmbeddedServer(home).server_pid() is None  # the last one out stopped it


def test_a_server_whose_socket_was_removed_is_stopped_cleanly_and_replaced(env, home):
    """E.g. a tmp cleaner removed the socket: the server still runs and holds the data dir. The
    next process stops it with SIGTERM (it syncs its AOF) before starting another on that dir."""
    holder = EmbeddedServer(home)
    holder.acquire()
    try:
        old = holder.server_pid()
        (home / "valkey.sock").unlink()
        assert no_job(narrate(env, "status", "x"))
        assert holder.is_up() and holder.server_pid() not in (None, old)
        wait_until(lambda: exited(old), 10, f"the old server {old} to exit")
        assert "Received SIGTERM" in (home / "valkey.log").read_text()
    finally:
        holder.release()


def test_a_silent_server_whose_pidfile_names_another_process_is_not_replaced_blindly(env, home):
    """The server lives (it holds its lock) but does not answer, and its pidfile names some other
    process: narrate signals neither, starts no second server on the data dir, and says so."""
    holder = EmbeddedServer(home)
    holder.acquire()
    pid = holder.server_pid()
    sleeper = subprocess.Popen(["sleep", "1000"])
    try:
        (home / "valkey.sock").unlink()
        (home / "valkey.pid").write_text(f"{sleeper.pid}\n")
        err = one_error_line(narrate(env, "status", "x"))
        assert "does not answer" in err and "cannot tell which process" in err, err
        time.sleep(0.2)
        assert sleeper.poll() is None and holder.running()
        assert not (home / "valkey.sock").exists()  # no second server was started
    finally:
        sleeper.kill()
        sleeper.wait()
        holder.release()  # cannot stop a server without a socket: the test does
        os.kill(pid, signal.SIGKILL)
