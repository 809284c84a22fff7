"""The embedded Valkey server: started on demand on a unix socket under NARRATE_HOME, shared by
narrate processes, stopped by the last one to leave, and its AOF keeps queued jobs."""

from __future__ import annotations

import json
import os
import time

import pytest
from helpers.procs import narrate, start_worker, stop_worker, wait_for_job, wait_until
from narrate.jobs.server.embedded import EmbeddedServer


def server_alive(home) -> bool:
    pid = EmbeddedServer(home).server_pid()
    return pid is not None


def test_run_with_nothing_listening_leaves_nothing_behind(env, home, voice_wav, tmp_path):
    doc = home / "story.txt"
    doc.write_text("Once upon a time. There was a test.\n\nIt passed.")
    assert not (home / "valkey.sock").exists() and not server_alive(home)
    out = tmp_path / "story.wav"  # run writes where asked, outside NARRATE_OUTPUT_DIR too
    proc = narrate(env, "run", str(doc), "--voice", str(voice_wav), "-o", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    st = json.loads(proc.stdout)
    assert st["status"] == "finished" and st["output"] == str(out) and out.stat().st_size > 44
    assert st["progress"]["done"] == st["progress"]["total"] == 3
    assert not server_alive(home) and not (home / "valkey.sock").exists()
    assert (home / "valkey" / "appendonlydir").is_dir()  # AOF on


def test_server_stays_while_a_worker_uses_it_and_listens_only_on_the_socket(env, home):
    worker = start_worker(env)
    try:
        assert wait_until(lambda: EmbeddedServer(home).is_up())
        proc = narrate(env, "status", "no-such-job")
        assert proc.returncode != 0 and "no job 'no-such-job'" in proc.stderr
        assert EmbeddedServer(home).is_up()  # the status process left; the worker still uses it
        client = EmbeddedServer(home).client()
        assert client.config_get("port")["port"] == "0"  # no TCP listener at all
        assert oct(os.stat(home / "valkey.sock").st_mode & 0o777) == "0o700"
        client.close()
    finally:
        log = stop_worker(worker)
    assert worker.returncode == 0, log
    assert wait_until(lambda: not server_alive(home))


@pytest.mark.parametrize("restart", ["shutdown", "sigkill"])
def test_queued_job_survives_server_restart(env, home, voice_wav, restart):
    doc = home / "book.txt"
    doc.write_text("A queued job. It waits for a worker.")
    proc = narrate(env, "submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "q.wav"), "--json")
    assert proc.returncode == 0, proc.stderr
    job_id = json.loads(proc.stdout)["id"]
    assert not server_alive(home)  # submit was the last user: the server was shut down (AOF synced)
    if restart == "sigkill":  # a server that dies hard: AOF (fsync every second) still has the job
        server = EmbeddedServer(home)
        server.acquire()
        time.sleep(1.5)
        os.kill(server.server_pid(), 9)
        assert wait_until(lambda: not server_alive(home))
        server.release()
    proc = narrate(env, "worker", "--burst", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert wait_for_job(job_id)["status"] == "finished"
