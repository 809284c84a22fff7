"""Two real `narrate serve` processes on one home (jobs/web/uploads.py `Owner`): a second server
starting while the first one receives an upload leaves that upload alone (the request then
succeeds), and a server starting after one was killed mid-upload removes what the killed one left."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

from helpers.procs import wait_until
from helpers.servers import free_port
from helpers.web import remove_home, serve_env, start_serve, stop, wait_serving
from urllib3 import encode_multipart_formdata


def begin_upload(port: int, name: str, sample: bytes) -> tuple[socket.socket, bytes]:
    """A voice upload to the server on `port`, sent but for its last bytes (returned, to send later)."""
    body, kind = encode_multipart_formdata(
        [("name", name), ("consent", "true"), ("audio_sample", ("sample.wav", sample, "audio/wav"))]
    )
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(
        f"POST /v1/audio/voices HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {kind}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body[:-200]
    )
    return s, body[-200:]


def answer(s: socket.socket) -> str:
    got = b""
    while chunk := s.recv(65536):
        got += chunk
    s.close()
    return got.decode(errors="replace")


def in_flight(home: Path) -> list[Path]:
    return sorted(p for p in (home / "uploads").rglob("sample.wav")) if (home / "uploads").exists() else []


def test_a_second_server_leaves_the_first_ones_upload_and_sweeps_a_killed_ones(checkpoint, voice_wav):
    env, home = serve_env(checkpoint, NARRATE_SERVE_STALL_S="120")
    ports = [free_port() for _ in range(3)]
    procs = [start_serve(env, ports[0])]
    try:
        wait_serving(procs[0], f"http://127.0.0.1:{ports[0]}")
        sample = voice_wav.read_bytes()
        s, rest = begin_upload(ports[0], "kept", sample)
        [upload] = wait_until(lambda: in_flight(home), 30, "the upload's file")
        procs.append(start_serve(env, ports[1]))  # a second server on the same home starts meanwhile
        wait_serving(procs[1], f"http://127.0.0.1:{ports[1]}")
        assert upload.is_file(), "the second server removed the first one's upload in flight"
        s.sendall(rest)
        said = answer(s)
        assert said.startswith("HTTP/1.1 201"), said[-600:]

        # The first server is killed during an upload: the next server to start removes what it left.
        s, _rest = begin_upload(ports[0], "lost", sample)
        [lost] = wait_until(lambda: in_flight(home), 30, "the second upload's file")
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait()
        s.close()
        assert lost.is_file()
        procs.append(start_serve(env, ports[2]))
        wait_serving(procs[2], f"http://127.0.0.1:{ports[2]}")
        assert not lost.exists() and list((home / "uploads").iterdir()) == []
        owners = list((home / "uploads.owners").iterdir())
        assert len(owners) == 2, owners  # the second and third servers' locks: the killed one's went too
    finally:
        for proc in procs:
            stop(proc)
        remove_home(home)
