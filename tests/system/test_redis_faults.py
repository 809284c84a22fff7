"""The Redis server goes away or refuses writes."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from helpers.books import book
from helpers.fake import fake_env, synthesized, wait_synthesized
from helpers.ops import submit_book
from helpers.procs import NARRATE, narrate, start_worker, stop_worker, wait_for_job, wait_until
from helpers.servers import PrivateRedis


def test_redis_gone_mid_job(env, home, voice_wav, monkeypatch):
    """The server dies mid-job and comes back NARRATE_TEST_OUTAGE_S (8) seconds later (AOF: past the
    patient connection's growing waits, 0.25 s to 4 s); the worker reconnects and the job completes. No
    password in any log, job meta, result or key."""
    server = PrivateRedis()
    server.start()
    try:
        e = fake_env(env, home, delay_ms=150, NARRATE_REDIS_URL=server.url)
        monkeypatch.setenv("NARRATE_REDIS_URL", server.url)
        job_id = submit_book(e, home, voice_wav, book(24))
        supervisor = start_worker(e)
        wait_synthesized(home, 4)
        server.kill()
        outage = float(os.environ.get("NARRATE_TEST_OUTAGE_S", "8"))  # 30 s also passes (slower)
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


def test_an_idle_worker_waits_out_an_outage(env, home, voice_wav, monkeypatch):
    """The server goes away while the worker waits for a job: it waits for it (patient connection, or
    trying again), and takes the job submitted once the server is back, without a restart or a
    traceback."""
    server = PrivateRedis()
    server.start()
    try:
        e = fake_env(env, home, delay_ms=0, NARRATE_REDIS_URL=server.url)
        monkeypatch.setenv("NARRATE_REDIS_URL", server.url)
        supervisor = start_worker(e)
        client = server.client()
        # Idle, polling for jobs: registered, and a moment later (on a loaded machine the start
        # can take longer than any fixed sleep; killing the server before it is up tests nothing).
        wait_until(lambda: client.scard("rq:workers") > 0, 60, "the worker to register", poll=0.2)
        time.sleep(1)
        server.kill()
        time.sleep(3)
        server.start()
        try:
            job_id = submit_book(e, home, voice_wav, book(4))
            st = wait_for_job(job_id, timeout=60)
        finally:
            log = stop_worker(supervisor)
        assert st["status"] == "finished", (st, log[-2000:])
        assert "Traceback" not in log, log[-3000:]
        assert "restarting" not in log, log[-3000:]
    finally:
        server.close()


def test_redis_refusing_writes_is_a_clear_error(env, home, voice_wav, monkeypatch):
    """A server out of memory (maxmemory, noeviction) refuses the submit: one line, exit 1,
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


@pytest.mark.parametrize(
    ("refuse", "allow", "said", "hint"),
    [
        ({"min-replicas-to-write": "1"}, {"min-replicas-to-write": "0"}, "NOREPLICAS", "min-replicas-to-write"),
        ({"maxmemory": "1", "maxmemory-policy": "noeviction"}, {"maxmemory": "0"}, "OOM", "maxmemory"),
    ],
)
def test_a_worker_waits_out_a_server_that_refuses_every_write(
    env, home, voice_wav, monkeypatch, refuse, allow, said, hint
):
    """The server refuses every write (NOREPLICAS, OOM): the supervisor does not restart the worker in
    a loop (each start a traceback); it says once what the server answered and what to do, waits with
    a growing delay, and starts the worker by itself once writes are accepted again."""
    server = PrivateRedis()
    server.start()
    try:
        e = fake_env(env, home, delay_ms=0, NARRATE_REDIS_URL=server.url)
        monkeypatch.setenv("NARRATE_REDIS_URL", server.url)
        client = server.client()
        for name, value in refuse.items():
            client.config_set(name, value)
        logged = home / "supervisor.log"  # read while it runs (a pipe would be read only at the end)
        with logged.open("w") as sink:
            supervisor = subprocess.Popen([*NARRATE, "worker"], env=e, stdout=sink, stderr=subprocess.STDOUT)
        try:
            # The supervisor has met the refusal (a restart loop would say "restarting in" at that exit), and
            # it keeps waiting: it looks again 1, 3 and 7 s after it said so. Writes are allowed before the third.
            wait_until(lambda: "refuses writes" in logged.read_text(), 60, "the supervisor to say so", poll=0.1)
            time.sleep(5)
            for name, value in allow.items():
                client.config_set(name, value)
            job_id = submit_book(e, home, voice_wav, book(2))
            st = wait_for_job(job_id, timeout=90)  # the next look at the server is at most a minute away
        finally:
            stop_worker(supervisor)
            log = logged.read_text()
        assert st["status"] == "finished", (st, log[-3000:])
        refused = [line for line in log.splitlines() if "refuses writes" in line]
        assert len(refused) == 1, log[-4000:]
        assert said in refused[0] and hint in refused[0] and "starts by itself" in refused[0], refused[0]
        assert log.count("worker exited with") <= 1 and "restarting in" not in log, log[-4000:]
        assert "Traceback" not in log, log[-4000:]
        assert "accepts writes again" in log, log[-3000:]
        assert server.password not in log
    finally:
        server.close()
