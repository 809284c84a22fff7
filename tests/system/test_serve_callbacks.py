"""Callbacks of a real `narrate serve` (worker, embedded Valkey, tiny checkpoint) to real HTTP
receivers: a non-ASCII callback URL is stored and sent percent-encoded, and the callbacks after it
still go out; a URL that cannot be sent (one stored before URLs were checked) is logged with the
narration and the URL and stops nothing; a host that takes 20 s to answer delays only its own
callbacks (at most NARRATE_CALLBACK_HOST_CONCURRENCY at once), another host gets its own within
about a second of the narration's end; userinfo is refused with a 400 naming callback_url."""

from __future__ import annotations

import http.server
import json
import threading
import time

import pytest
from helpers.procs import wait_until
from helpers.servers import free_port
from helpers.web import output, serve

SLOW_S = 20.0


class Receiver:
    """An HTTP server on a free loopback port that records each POST (path, JSON body, when), after
    waiting `delay_s` before it answers."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.port = free_port()
        self.got: list[tuple[str, dict, float]] = []
        got, lock = self.got, threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with lock:
                    got.append((self.path, body, time.monotonic()))
                time.sleep(delay_s)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, job_id: str) -> tuple[str, dict, float] | None:
        return next((g for g in self.got if g[1]["id"] == job_id), None)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def hooked(checkpoint):
    slow, fast = Receiver(SLOW_S), Receiver()
    s = serve(checkpoint, NARRATE_CALLBACK_HOSTS=f"127.0.0.1:{slow.port},127.0.0.1:{fast.port}").with_worker()
    yield s, slow, fast
    slow.close()
    fast.close()
    logs = s.close()
    assert "Traceback" not in logs, logs[-4000:]


def narrate_text(served, voice_wav, text: str, callback_url: str) -> str:
    with open(voice_wav, "rb") as f:
        made = served.post(
            "/v1/narrations",
            data={"text": text, "format": "wav", "callback_url": callback_url},
            files={"voice_sample": f},
        )
    assert made.status_code == 202, made.text
    return made.json()["id"]


def ended_at(served, job_id: str) -> float | None:
    """When the test saw the narration completed (monotonic), polling closely."""
    if served.get(f"/v1/narrations/{job_id}").json()["status"] == "completed":
        return time.monotonic()
    return None


def test_callbacks_survive_bad_urls_and_a_slow_host(hooked, voice_wav):
    served, slow, fast = hooked
    refused = served.post(
        "/v1/narrations",
        data={"text": "Hi.", "callback_url": f"http://me:pw@127.0.0.1:{fast.port}/"},
        files={"voice_sample": voice_wav.read_bytes()},
    )
    assert refused.status_code == 400 and refused.json()["error"]["param"] == "callback_url", refused.text
    assert "user name or password" in refused.json()["error"]["message"]

    # Three narrations whose host answers after 20 s (more than the per-host bound of 2), then one
    # to another host by a non-ASCII URL, then a plain one.
    slowed = [
        narrate_text(served, voice_wav, f"A slow story number {n}.", f"http://127.0.0.1:{slow.port}/slow")
        for n in range(3)
    ]
    accented = narrate_text(served, voice_wav, "A story of a café.", f"http://127.0.0.1:{fast.port}/café?q=thé")
    seen = wait_until(lambda: ended_at(served, accented), 180, "the accented narration to finish", poll=0.1)
    path, body, when = wait_until(lambda: fast.of(accented), 15, "the accented narration's callback")
    assert path == "/caf%C3%A9?q=th%C3%A9" and body["status"] == "completed"
    assert when - seen < 2.5, f"the callback came {when - seen:.1f} s after the narration ended"
    assert slow.of(slowed[0]) is not None  # the slow host was being called all along

    # A URL no request could store any more (stored before URLs were checked): logged, nothing stops.
    from narrate.jobs.server.connection import Connection
    from narrate.jobs.settings import Settings
    from narrate.jobs.web.callbacks import KEY

    with Connection(Settings(home=served.home)) as conn:
        conn.redis.hset(KEY, slowed[0], f"http://127.0.0.1:{fast.port}/a b")
    plain = narrate_text(served, voice_wav, "A plain ending.", f"http://127.0.0.1:{fast.port}/plain")
    seen = wait_until(lambda: ended_at(served, plain), 180, "the last narration to finish", poll=0.1)
    path, body, when = wait_until(lambda: fast.of(plain), 15, "the last narration's callback")
    assert path == "/plain" and when - seen < 2.5

    # The slow host's callbacks: at most two at once, each sent (and timed out) in turn.
    wait_until(lambda: all(slow.of(j) for j in slowed), 60, "every slow callback to be tried")
    starts = sorted(slow.of(j)[2] for j in slowed)  # type: ignore[index]
    assert starts[2] - starts[0] > 5, "a third callback to the slow host went out beside the first two"
    said = f"callback of {slowed[0]} to http://127.0.0.1:{fast.port}/a b not sent: callback_url is not a URL"
    wait_until(lambda: said in output(served.proc), 15, f"the line {said!r}")
    timed_out = [f"callback of {j} to http://127.0.0.1:{slow.port}/slow failed: timed out" for j in slowed[1:]]
    wait_until(lambda: all(line in output(served.proc) for line in timed_out), 30, f"the lines {timed_out}")
