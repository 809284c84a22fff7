"""The hostile probe of `narrate serve` replayed against a real server process with an API key:
unauthenticated 400 MB bodies to the login form (memory and disk stay bounded), bodies that
trickle a byte at a time (dropped, their upload removed), 300 sockets that never finish their
headers (a legitimate request is still answered within 2 s; the idle ones are closed), event
streams (bounded in number and length), submissions a minute, wrong keys, and sessions that
signing out ends."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
from helpers.servers import free_port
from helpers.web import remove_home, serve_env, start_serve, stop, wait_serving

KEY = "attack-test-key-" + "k" * 24
AUTH = {"Authorization": f"Bearer {KEY}"}
BOUNDARY = "b0undary"
MB400 = 400 << 20


@pytest.fixture(scope="module")
def server(checkpoint):
    env, home = serve_env(
        checkpoint,
        NARRATE_API_KEY=KEY,
        NARRATE_SERVE_STALL_S="2",
        NARRATE_SERVE_HEADER_S="3",
        NARRATE_SERVE_CLIENT_STREAMS="2",
        NARRATE_SERVE_STREAM_S="3",
        NARRATE_SERVE_SUBMITS_PER_MIN="5",
        NARRATE_SERVE_TRUSTED_PROXIES="127.0.0.1",
    )
    port = free_port()
    proc = start_serve(env, port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_serving(proc, url, AUTH)
        yield proc, url, port, home
    finally:
        print(stop(proc)[-3000:])
        remove_home(home)


def _as(client: str) -> dict[str, str]:
    """Headers that make a request come from `client` (the server trusts 127.0.0.1 as its proxy), so
    that one test's counted requests do not hold back another's."""
    return {"X-Forwarded-For": client}


def rss_mb(pid: int) -> float:
    out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True, check=True).stdout
    return int(out.strip()) / 1024


def uploads(home: Path) -> list[Path]:
    root = home / "uploads"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def _multipart_head(name: str = "key", filename: str | None = None) -> bytes:
    extra = f'; filename="{filename}"' if filename else ""
    return (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"{extra}\r\n\r\n').encode()


def _send_body(port: int, path: str, chunked: bool, extra: str = "") -> str:
    """One request of a 400 MB multipart body to `path`; the status line the server answered (or
    what became of the connection)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        length = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {MB400}"
        s.sendall(
            (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}Content-Type: multipart/form-data; "
                f"boundary={BOUNDARY}\r\n{length}\r\n\r\n"
            ).encode()
        )
        piece = _multipart_head("key", "big.bin") + b"x" * ((1 << 20) - 100)
        sent = 0
        with contextlib.suppress(OSError):
            while sent < MB400:
                s.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n" if chunked else piece)
                sent += len(piece)
        s.settimeout(10)
        return s.recv(200).split(b"\r\n")[0].decode(errors="replace") or "closed"
    except OSError as e:
        return f"connection: {e}"
    finally:
        s.close()


def test_unauthenticated_400_mb_bodies_leave_memory_and_disk_bounded(server):
    proc, url, port, home = server
    idle = rss_mb(proc.pid)
    peak, said, done = [idle], [], threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak.append(rss_mb(proc.pid))
            peak.append(len(uploads(home)) * 1e6)  # any file at all under uploads fails the bound below
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    t0 = time.monotonic()
    attacks = [("/login", i % 2 == 0) for i in range(20)] + [("/v1/narrations", i % 2 == 0) for i in range(4)]
    threads = [threading.Thread(target=lambda a=a: said.append(_send_body(port, *a))) for a in attacks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    done.set()
    watcher.join()
    took = time.monotonic() - t0
    assert max(peak) - idle < 100, f"the server grew from {idle:.0f} MB to {max(peak):.0f} MB"
    assert all(("413" in s or "401" in s or "closed" in s or "connection" in s) for s in said), said
    assert sum("413" in s for s in said) >= 10 and sum("401" in s for s in said) >= 2, said
    assert not uploads(home)
    assert took < 60, f"the attack took {took:.0f} s: bodies were read"
    if sys.platform.startswith("linux"):  # nothing spooled to a temporary file either
        spooled = [os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{proc.pid}/fd")]
        assert not [
            p for p in spooled if p.startswith("/tmp/") and "narrate-serve-" not in p and not p.startswith(str(home))
        ], spooled
    assert requests.get(f"{url}/v1/models", headers=AUTH, timeout=5).status_code == 200


def _trickle(
    port: int, path: str, headers: str, head: bytes, every_s: float, limit_s: float, length: int
) -> tuple[str, float]:
    s = socket.create_connection(("127.0.0.1", port), timeout=limit_s)
    t0 = time.monotonic()
    try:
        s.sendall(
            (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}Content-Type: multipart/form-data; "
                f"boundary={BOUNDARY}\r\nContent-Length: {length}\r\n\r\n"
            ).encode()
            + head
        )
        s.setblocking(False)
        while time.monotonic() - t0 < limit_s:
            with contextlib.suppress(BlockingIOError):
                got = s.recv(200)
                return got.split(b"\r\n")[0].decode(), time.monotonic() - t0
            with contextlib.suppress(OSError):
                s.send(b"x")
            time.sleep(every_s)
        return "no answer", time.monotonic() - t0
    finally:
        s.close()


@pytest.mark.parametrize("path, keyed", [("/v1/narrations", True), ("/login", False)])
def test_a_body_that_trickles_is_dropped_and_its_upload_removed(server, path, keyed):
    """A byte every second never stalls for NARRATE_SERVE_STALL_S (2 s here), yet comes far slower
    than NARRATE_SERVE_MIN_RATE_KIB: 408 soon after the first 2 s, and the partial upload is gone."""
    _, url, port, home = server
    headers = f"Authorization: Bearer {KEY}\r\nX-Forwarded-For: 10.1.0.{int(keyed)}\r\n" if keyed else ""
    head = _multipart_head("file", "book.txt") + b"Once upon a time. " * 20 if keyed else _multipart_head("key")
    length = 100_000 if keyed else 30_000  # the login form's within its small cap: only its pace is wrong
    status, took = _trickle(port, path, headers, head, 1.0, 30, length)
    assert "408" in status and took < 10, (status, took)
    time.sleep(0.5)
    assert not uploads(home)


def test_idle_sockets_do_not_lock_people_out(server):
    """300 connections that never finish their headers (the old server kept 256 and then answered
    everyone 503): a request with the key is still answered within 2 s, and after
    NARRATE_SERVE_HEADER_S (3 s here) the idle ones are closed."""
    _, url, port, _ = server
    idle = []
    for _ in range(300):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(f"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())  # never the blank line
        idle.append(s)
    try:
        t0 = time.monotonic()
        got = requests.get(f"{url}/v1/models", headers=AUTH, timeout=10)
        took = time.monotonic() - t0
        assert got.status_code == 200 and took < 2, (got.status_code, took)
        time.sleep(3 + 1.5)
        closed = 0
        for s in idle:
            s.settimeout(0.5)
            try:
                closed += s.recv(100) == b""
            except ConnectionResetError:
                closed += 1
            except TimeoutError:
                pass
        assert closed == len(idle), f"{len(idle) - closed} idle connections still open"
    finally:
        for s in idle:
            s.close()


def _narration(url: str, client: str) -> str:
    """A narration scheduled far ahead (it never ends while the test watches it)."""
    got = requests.post(
        f"{url}/v1/narrations",
        headers={**AUTH, **_as(client)},
        timeout=60,
        data={"text": "A line to read. Another one.", "voice": "ryan", "in": "10d"},
    )
    if got.status_code == 400 and "ryan" in got.text:  # a Base checkpoint has no presets: a sample instead
        from helpers.audio import write_voice

        sample = write_voice(Path(f"/tmp/attack-voice-{os.getpid()}.wav"))
        with open(sample, "rb") as f:
            got = requests.post(
                f"{url}/v1/narrations",
                headers={**AUTH, **_as(client)},
                timeout=60,
                data={"text": "A line to read. Another one.", "in": "10d"},
                files={"voice_sample": ("me.wav", f)},
            )
    assert got.status_code == 202, got.text
    return got.json()["id"]


def test_event_streams_are_bounded_in_number_and_length(server):
    _, url, _, _ = server
    job = _narration(url, "10.2.0.1")
    headers = {**AUTH, **_as("10.2.0.2")}
    streams = [
        requests.get(f"{url}/v1/narrations/{job}/events", headers=headers, stream=True, timeout=30) for _ in range(2)
    ]
    try:
        assert [s.status_code for s in streams] == [200, 200]
        third = requests.get(f"{url}/v1/narrations/{job}/events", headers=headers, timeout=30)
        assert third.status_code == 429 and "event streams" in third.json()["error"]["message"]
        assert (
            requests.get(
                f"{url}/v1/narrations/{job}/events", headers={**AUTH, **_as("10.2.0.3")}, stream=True, timeout=30
            ).status_code
            == 200
        )  # another address
        t0 = time.monotonic()
        body = b"".join(streams[0].iter_content(None))  # a scheduled narration: it ends by the stream's bound
        assert time.monotonic() - t0 < 10 and b"event: narration" in body and b"retry: " in body
    finally:
        for s in streams:
            s.close()
    time.sleep(0.5)
    assert (
        requests.get(f"{url}/v1/narrations/{job}/events", headers=headers, stream=True, timeout=30).status_code == 200
    )


def test_submissions_a_minute_per_address(server):
    _, url, _, _ = server
    headers = {**AUTH, **_as("10.3.0.1")}
    said = [
        requests.post(f"{url}/v1/narrations", headers=headers, data={"text": "Hi."}, timeout=30).status_code
        for _ in range(7)
    ]
    assert said[:5] == [400] * 5 and said[5:] == [429, 429], said  # (no voice: 400, but each one counted)
    refused = requests.post(f"{url}/v1/narrations", headers=headers, data={"text": "Hi."}, timeout=30)
    assert int(refused.headers["Retry-After"]) >= 1 and "too many submissions" in refused.json()["error"]["message"]
    other = requests.post(f"{url}/v1/narrations", headers={**AUTH, **_as("10.3.0.2")}, data={"text": "Hi."})
    assert other.status_code == 400


def test_wrong_keys_are_slowed_then_refused_per_address_but_the_right_key_never_is(server):
    """Five wrong keys from one address (behind a proxy: everyone who shares it) wait a second each, then the
    next wrong one is 429 (a rate_limit_error, not a server_error), at the header and the login form alike; the
    right key still passes from that address, by header and by the form."""
    _, url, _, _ = server
    wrong = {"Authorization": "Bearer " + "w" * 40, **_as("10.4.0.1")}
    t0 = time.monotonic()
    said = [requests.get(f"{url}/v1/narrations", headers=wrong, timeout=30).status_code for _ in range(5)]
    assert said == [401] * 5 and time.monotonic() - t0 >= 5  # each wrong key waits a second
    refused = requests.get(f"{url}/v1/narrations", headers=wrong, timeout=30)
    assert refused.status_code == 429 and refused.json()["error"]["type"] == "rate_limit_error"
    assert int(refused.headers["Retry-After"]) >= 1
    bad_form = requests.post(f"{url}/login", data={"key": "w" * 40}, headers=_as("10.4.0.1"), allow_redirects=False)
    assert bad_form.status_code == 429  # the login form counts the same wrong keys
    assert requests.get(f"{url}/v1/narrations", headers={**AUTH, **_as("10.4.0.1")}).status_code == 200
    form = requests.post(f"{url}/login", data={"key": KEY}, headers=_as("10.4.0.1"), allow_redirects=False)
    assert form.status_code == 303  # signed in
    assert requests.get(f"{url}/v1/narrations", headers={**AUTH, **_as("10.4.0.2")}).status_code == 200
    assert requests.get(f"{url}/v1/narrations", headers={"Authorization": f"bearer {KEY}"}).status_code == 200


def test_signing_out_ends_the_session_and_https_behind_a_proxy_makes_the_cookie_secure(server):
    _, url, _, _ = server
    browser = requests.Session()
    signed = browser.post(
        f"{url}/login", data={"key": KEY, "next": "/queue"}, headers=_as("10.5.0.1"), allow_redirects=False
    )
    assert signed.status_code == 303 and "secure" not in signed.headers["set-cookie"].lower()
    cookie = browser.cookies.get("narrate_session")
    assert cookie and KEY not in cookie
    copied = {"Cookie": f"narrate_session={cookie}", "Accept": "application/json"}
    assert requests.get(f"{url}/v1/narrations", headers=copied).status_code == 200
    out = browser.post(f"{url}/logout", headers={"Origin": url}, allow_redirects=False)
    assert out.status_code == 303
    assert requests.get(f"{url}/v1/narrations", headers=copied).status_code == 401  # even a copy of it
    secure = requests.post(
        f"{url}/login",
        data={"key": KEY},
        allow_redirects=False,
        headers={"X-Forwarded-Proto": "https", **_as("10.5.0.2")},
    )
    assert secure.status_code == 303 and "; secure" in secure.headers["set-cookie"].lower()


def test_a_client_that_leaves_mid_body_is_one_log_line_not_a_traceback(server):
    """Login bodies (and any form) dropped half-way: the server logs one line each (a client leaving is not an
    error), not ClientDisconnect tracebacks (about 8 KB a request before), and goes on answering."""
    proc, url, port, _ = server
    before = proc.log_path.read_text(errors="replace")
    for i in range(5):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(
            (
                f"POST /login HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Forwarded-For: 10.6.0.{i}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 5000\r\n\r\n"
                "key=abc"
            ).encode()
        )
        time.sleep(0.2)
        s.close()
    time.sleep(1.0)
    assert requests.get(f"{url}/v1/models", headers=AUTH, timeout=10).status_code == 200
    added = proc.log_path.read_text(errors="replace")[len(before) :]
    assert "Traceback" not in added and "ClientDisconnect" not in added, added[-3000:]
    assert added.count("the client left before sending its whole request") == 5, added[-3000:]


class SlowBodies:
    """`per_address` POST /login bodies from each of `addresses` loopback addresses (127.0.0.2 on), each sending one
    byte every `every_s` seconds (under every per-address cap, far under the minimum rate); a body the server
    closes is opened again at once, so the attack keeps holding as many connections as it can."""

    def __init__(self, port: int, addresses: int, per_address: int, every_s: float) -> None:
        self.port, self.every_s = port, every_s
        self.sources = [f"127.0.0.{2 + i}" for i in range(addresses) for _ in range(per_address)]
        self.socks: list[socket.socket | None] = [None] * len(self.sources)
        self.reopened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _open(self, i: int) -> None:
        with contextlib.suppress(OSError):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=2, source_address=(self.sources[i], 0))
            s.sendall(
                (
                    f"POST /login HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: "
                    "application/x-www-form-urlencoded\r\nContent-Length: 60000\r\n\r\nk"
                ).encode()
            )
            s.setblocking(False)
            self.socks[i] = s

    def _alive(self, s: socket.socket) -> bool:
        try:
            return s.recv(4096) != b""  # an answer (408) or the close: the server let go of it
        except BlockingIOError:
            return True
        except OSError:
            return False

    def _run(self) -> None:
        last_byte = time.monotonic()
        while not self._stop.is_set():
            for i, s in enumerate(self.socks):
                if s is not None and not self._alive(s):
                    s.close()
                    self.socks[i] = None
                if self.socks[i] is None:
                    self._open(i)
                    self.reopened += 1
            if time.monotonic() - last_byte >= self.every_s:
                for s in self.socks:
                    if s is not None:
                        with contextlib.suppress(OSError):
                            s.send(b"x")
                last_byte = time.monotonic()
            time.sleep(0.2)

    def held(self) -> int:
        return sum(s is not None for s in self.socks)

    def __enter__(self) -> SlowBodies:
        for i in range(len(self.socks)):
            self._open(i)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for s in self.socks:
            if s is not None:
                s.close()


def test_a_pool_of_slow_bodies_from_many_addresses_locks_no_one_out(server):
    """The replay of the hostile probe: 600 login bodies sending a byte every 4 s, from 10 loopback addresses (60
    each, under the per-address cap), reopened as fast as the server closes them, fill the 512-connection pool with
    busy connections. A request with the key from another address, on a connection of its own (a kept-alive idle
    one is the first a full pool closes), is answered every time (before: reset, or 3 times in 14 over 75 s): a
    body below the minimum rate, of an address more crowded than the newcomer's, is closed to make room. On a quiet
    machine each answer takes 0.01-0.43 s (printed); beside the whole suite on two cores up to 3.5 s was seen, so
    the bound here is only that each is answered, within 10 s (a dropped connection fails at once)."""
    _, url, port, _ = server
    with SlowBodies(port, addresses=10, per_address=60, every_s=4.0) as attack:
        time.sleep(2.0)
        assert attack.held() >= 500, attack.held()
        took = []
        for _ in range(8):
            t0 = time.monotonic()
            got = requests.get(f"{url}/v1/models", headers={**AUTH, "Connection": "close"}, timeout=30)
            took.append(time.monotonic() - t0)
            assert got.status_code == 200, got.text
            time.sleep(1.0)
        print(
            f"keyed requests answered in {', '.join(f'{t:.2f}' for t in took)} s; the attack held "
            f"{attack.held()} bodies, reopened {attack.reopened}"
        )
    assert max(took) < 10, took
