"""A submit is acknowledged only once the job is in the server's append-only file. A server that
cannot write its AOF (its disk is full) gets the submit refused with a clear message, and the
last narrate process out leaves it running instead of shutting it down (which would drop what it
holds only in memory): once space is freed, every job it acknowledged is on disk."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from helpers.books import book
from helpers.fake import fake_env
from helpers.ops import submit_book
from helpers.procs import exited, narrate, wait_until
from helpers.servers import PrivateRedis
from narrate.jobs.server.durability import PROBE_KEY, wait_durable
from narrate.jobs.server.embedded import EmbeddedServer


def tiny_tmpfs(path: Path, size: str = "2m") -> None:
    """Mount a small tmpfs at `path` (Linux, as root): the way to fill a disk in a test."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("filling a disk needs a tmpfs mount: root on Linux")
    path.mkdir(mode=0o700)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs CAP_SYS_ADMIN): {proc.stderr.strip()}")


def fill(directory: Path) -> Path:
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (65536, 4096, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:  # ENOSPC
                pass
    return filler


def test_submit_on_a_full_disk_is_refused_and_nothing_acknowledged_is_lost(env, home, voice_wav):
    data = home / "valkey"
    tiny_tmpfs(data)
    server = EmbeddedServer(home)
    try:
        e = fake_env(env, home)
        first = submit_book(e, home, voice_wav, book(5), "first")  # acknowledged while there is room
        server.acquire()  # a user (say, a worker) keeps the server up
        pid = server.server_pid()
        filler = fill(data)
        doc = home / "second.txt"
        doc.write_text(book(200, "second"))  # more than the slack in the last page of the AOF
        args = ("submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "second.wav"), "--json")
        proc = narrate(e, *args)
        err = proc.stderr.strip()
        assert proc.returncode == 1 and proc.stdout == "", proc.stdout + proc.stderr
        assert err.startswith("Error: ") and len(err.splitlines()) == 1, err
        assert "cannot persist" in err and "No space left on device" in err and str(data) in err, err
        server.release()  # that user leaves; CLI processes come and go, each the last one out
        for _ in range(2):
            assert narrate(e, "status", first).returncode == 0
        assert server.server_pid() == pid  # never shut down (nor restarted) while it cannot persist
        filler.unlink()
        proc = narrate(e, *args)  # the same job (ids are derived from the request), now on disk
        assert proc.returncode == 0, proc.stderr
        second = json.loads(proc.stdout)["id"]
        # Whatever the server held only in memory is gone now. The submit, the last one out, may have stopped the
        # server itself first (it can persist again, once the server has seen its disk free): gone all the same.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait_until(lambda: exited(pid), 10, f"process {pid} to exit")
        for job_id in (first, second):
            proc = narrate(e, "status", job_id, "--json")  # restarts the server from its AOF
            assert proc.returncode == 0 and json.loads(proc.stdout)["status"] == "queued", proc.stderr
        assert server.server_pid() is None  # the last user out stops a server that persists again
    finally:
        server.release()
        pid = server.server_pid()
        if pid:
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: exited(pid), 10, f"process {pid} to exit")
        subprocess.run(["umount", "-l", str(data)], check=False)


def test_the_wait_on_external_servers(external_redis):
    """Asked only of servers with an AOF; not waited for when the server leaves the fsync to its
    OS (appendfsync no); skipped when an ACL forbids WAITAOF."""
    if external_redis.info("persistence").get("aof_enabled"):
        pytest.skip("the external test Redis has AOF on")
    external_redis.delete(PROBE_KEY)
    wait_durable(external_redis)  # no AOF: nothing to wait for, nothing written
    assert not external_redis.exists(PROBE_KEY)
    server = PrivateRedis()  # AOF on
    try:
        server.start()
        client = server.client()
        client.set("k", "v")
        wait_durable(client)
        assert client.exists(PROBE_KEY)
        client.config_set("appendfsync", "no")  # the OS fsyncs when it likes: nothing to wait for
        started = time.monotonic()
        wait_durable(client)
        assert time.monotonic() - started < 2
        client.config_set("appendfsync", "everysec")
        client.acl_setuser("narrow", enabled=True, passwords=["+pw"], commands=["+@all", "-waitaof"], keys=["*"])
        narrow = redis.Redis(host="127.0.0.1", port=server.port, username="narrow", password="pw")
        wait_durable(narrow)  # not allowed to ask: no claim either way, and no error
    finally:
        server.close()
