"""An upload to Audiobookshelf (`narrate export --abs-url` without a library folder) is followed by a
scan of that library (`POST /api/libraries/{id}/scan`, as Audiobookshelf 2.36 routes it): its upload
only moves the files into the folder, so with the library's watcher off the book would stay unscanned.
A refused scan (403: the token is not an admin's) is a warning; the upload still counts. A real HTTP
server in this process records what is asked of it."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import pytest
from helpers.servers import free_port
from narrate.jobs.library.audiobookshelf import push
from narrate.jobs.library.metadata import BookInfo

TOKEN = "abs-token-for-the-test"


class Recorder:
    def __init__(self, scan_status: int = 200) -> None:
        self.calls: list[tuple[str, str, str | None]] = []  # (method, path, Authorization)
        calls = self.calls

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, status: int, body: bytes = b"OK") -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                calls.append(("GET", self.path, self.headers.get("Authorization")))
                libraries = [{"id": "lib-books", "mediaType": "book", "folders": [{"id": "fold-1"}]}]
                self._answer(200, json.dumps({"libraries": libraries}).encode())

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                calls.append(("POST", self.path, self.headers.get("Authorization")))
                if self.path.endswith("/scan") and scan_status != 200:
                    self._answer(scan_status, b"Forbidden")
                    return
                self._answer(200)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def book(tmp_path) -> tuple[BookInfo, Path]:
    folder = tmp_path / "The Odyssey"
    folder.mkdir()
    (folder / "The Odyssey.mp3").write_bytes(b"ID3" + b"\0" * 64)
    return BookInfo(title="The Odyssey", authors=["Homer"], narrators=["narrate"], job_id="narrate-1"), folder


def test_an_upload_asks_for_a_scan_of_its_library(book):
    server = Recorder()
    try:
        told = push(server.url, TOKEN, None, book[0], book[1], in_library=False)
    finally:
        server.close()
    assert [(m, p) for m, p, _ in server.calls] == [
        ("GET", "/api/libraries"),
        ("POST", "/api/upload"),
        ("POST", "/api/libraries/lib-books/scan"),
    ]
    assert all(auth == f"Bearer {TOKEN}" for _, _, auth in server.calls)
    assert told == "uploaded to Audiobookshelf library lib-books and its scan asked for"


def test_a_refused_scan_is_a_warning_and_the_upload_counts(book):
    server = Recorder(scan_status=403)
    try:
        told = push(server.url, TOKEN, None, book[0], book[1], in_library=False)  # no exception: it was uploaded
    finally:
        server.close()
    assert [p for _, p, _ in server.calls][-2:] == ["/api/upload", "/api/libraries/lib-books/scan"]
    assert told.startswith(
        "uploaded to Audiobookshelf library lib-books; warning: asking it to scan the library "
        "failed (a scan needs an admin's token): Audiobookshelf answered 403"
    )
    assert "the book appears once the library is scanned" in told
