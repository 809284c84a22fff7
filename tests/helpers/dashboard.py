"""Helpers for the dashboard tests: a real `narrate dashboard` process on a free port, raw HTTP
requests with any Host/Origin/Referer headers, and the state of narrate's queue in Redis."""

from __future__ import annotations

import contextlib
import http.client
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

from rq import Queue
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from helpers.procs import NARRATE
from helpers.servers import free_port


@dataclass
class Reply:
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


NO_HOST = "\0"  # send no Host header at all


def request(port: int, method: str, path: str, headers: dict[str, str] | None = None, host: str | None = None) -> Reply:
    """One HTTP request to 127.0.0.1:port. `host`: the Host header (None: 127.0.0.1:port)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if host != NO_HOST:
            conn.putheader("Host", f"127.0.0.1:{port}" if host is None else host)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.endheaders()
        resp = conn.getresponse()
        body = resp.read()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, body)
    finally:
        conn.close()


@contextlib.contextmanager
def dashboard(env: dict, *args: str, port: int | None = None) -> Iterator[int]:
    """`narrate dashboard --port PORT ARGS`, running until the block ends (SIGTERM); yields the port."""
    port = port or free_port()
    proc = subprocess.Popen(
        [*NARRATE, "dashboard", "--port", str(port), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"dashboard exited: {proc.communicate()[0]}"
            try:
                request(port, "GET", "/favicon.ico")
                break
            except OSError:
                assert time.monotonic() < deadline, "dashboard did not answer in 60 s"
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def queue(client, name: str = "narrate") -> Queue:
    return Queue(name, connection=client, serializer=JSONSerializer)


def fail_job(client, job_id: str) -> None:
    """Move a queued job to the failed registry, as a worker does when the job fails for good."""
    q = queue(client)
    job = Job.fetch(job_id, connection=client, serializer=JSONSerializer)
    q.remove(job)
    job.set_status(JobStatus.FAILED)
    q.failed_job_registry.add(job, ttl=3600, exc_string="RuntimeError: made to fail by the test")


def state(client) -> dict[str, object]:
    """What a cross-site request must not change: queued ids, failed ids, which jobs exist."""
    q = queue(client)
    return {
        "queued": q.get_job_ids(),
        "failed": q.failed_job_registry.get_job_ids(),
        "jobs": sorted(k.decode()[len("rq:job:") :] for k in client.keys("rq:job:*") if k.count(b":") == 2),
    }
