"""`narrate export`: an EPUB with a series, a cover and an ISBN, narrated (fake engine, embedded
server), becomes an Audiobookshelf-layout folder whose metadata.json reads back as Audiobookshelf's
scanner reads it (flat and under "metadata"; series "Name #N"), whose OPF and tags agree with it;
exporting again never clobbers; another book of the same name gets " (2)"; kill -9 during an export
never leaves a visible half folder."""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.books import COVER, write_epub
from helpers.fake import fake_env
from helpers.ops import submit
from helpers.procs import NARRATE, narrate, wait_for_job

ABS_SERIES = re.compile(r" #([^#\s]+)$")  # Audiobookshelf's abmetadataGenerator: the sequence after " #"
DC = "{http://purl.org/dc/elements/1.1/}"
OPF = "{http://www.idpf.org/2007/opf}"
FILES = ["The Odyssey.m4b", "cover.jpg", "desc.txt", "metadata.json", "metadata.opf", "reader.txt"]


@pytest.fixture
def done(env, home, voice_wav):
    """(env, two finished jobs of one EPUB: the second with another seed, so another job)."""
    e = fake_env(env, home)
    book = home / "odyssey.epub"
    write_epub(book)
    ids = [
        submit(e, book, voice_wav, home / "out" / f"odyssey{n}.m4b", "--narrator", "Ann Reader", "--seed", str(n))
        for n in (1, 2)
    ]
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    for job_id in ids:
        assert wait_for_job(job_id)["status"] == "finished"
    return e, ids


def export(env, job_id: str, library, *extra: str) -> dict:
    ran = narrate(env, "export", job_id, "--library", str(library), "--json", *extra)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_an_epub_exports_to_the_audiobookshelf_layout(done, home):
    from mutagen.mp4 import MP4

    e, (first, second) = done
    library = home / "library"
    library.mkdir()
    got = export(e, first, library)
    folder = library / "Homer" / "Greek Classics" / "Vol 2 - 2003 - The Odyssey {Ann Reader}"
    assert got["folder"] == str(folder) and got["note"] == "exported"
    assert sorted(p.name for p in folder.iterdir()) == FILES
    assert (folder / "cover.jpg").read_bytes() == COVER
    assert (folder / "reader.txt").read_text() == "Ann Reader\n"
    assert (folder / "desc.txt").read_text() == "The epic of a long way home.\n"

    status = wait_for_job(first)
    data = json.loads((folder / "metadata.json").read_text())
    for fields in (data, data["metadata"]):  # newer servers read the top level, older ones "metadata"
        assert fields["title"] == "The Odyssey" and fields["authors"] == ["Homer"]
        assert fields["narrators"] == ["Ann Reader"] and fields["publishedYear"] == "2003"
        assert fields["publisher"] == "Penguin" and fields["isbn"] == "9780140449136" and fields["language"] == "en"
        assert fields["description"] == "The epic of a long way home."
        [series] = fields["series"]
        m = ABS_SERIES.search(series)
        assert m and m.group(1) == "2" and series[: m.start()] == "Greek Classics"
    chapters = data["chapters"]
    assert [c["title"] for c in chapters] == [c["title"] for c in status["result"]["chapters"]]
    assert chapters[0]["start"] == 0 and all(c["start"] < c["end"] for c in chapters)
    assert all(a["end"] == b["start"] for a, b in zip(chapters, chapters[1:], strict=False))
    assert chapters[-1]["end"] == pytest.approx(status["result"]["duration_seconds"], abs=0.001)

    package = ET.parse(folder / "metadata.opf").getroot()
    meta = package.find(f"{OPF}metadata")
    assert meta is not None and meta.findtext(f"{DC}title") == "The Odyssey"
    roles = {c.get(f"{OPF}role"): c.text for c in meta.findall(f"{DC}creator")}
    assert roles == {"aut": "Homer", "nrt": "Ann Reader"}
    isbn = [i.text for i in meta.findall(f"{DC}identifier") if i.get(f"{OPF}scheme") == "ISBN"]
    assert isbn == ["9780140449136"]
    named = {m.get("name"): m.get("content") for m in meta.findall(f"{OPF}meta")}
    assert named == {"calibre:series": "Greek Classics", "calibre:series_index": "2"}

    tags = MP4(folder / "The Odyssey.m4b").tags
    assert tags["\xa9alb"] == ["The Odyssey"] and tags["\xa9nam"] == ["The Odyssey"]
    assert tags["\xa9ART"] == ["Homer"] and tags["aART"] == ["Homer"] and tags["\xa9wrt"] == ["Ann Reader"]
    assert tags["\xa9mvn"] == ["Greek Classics"] and tags["\xa9mvi"] == [2] and tags["\xa9day"] == ["2003"]
    assert bytes(tags["covr"][0]) == COVER

    again = export(e, first, library)  # the same job: never a second copy, never replaced
    assert again["folder"] == str(folder) and again["note"] == "already exported"
    other = export(e, second, library)  # another book with the same folder name
    assert other["folder"] == str(folder) + " (2)" and "holds another book" in other["note"]
    assert json.loads((folder / "metadata.json").read_text())["narrate"]["job"] == first
    assert [p.name for p in library.rglob(".narrate-export-*")] == []

    flat = home / "flat"
    flat.mkdir()
    assert export(e, first, flat, "--layout", "flat")["folder"] == str(flat / "The Odyssey")
    assert export(e, first, flat, "--layout", "plex")["folder"] == str(flat / "Homer" / "The Odyssey")


def test_kill_9_during_an_export_never_leaves_a_visible_half_folder(done, home):
    e, (first, _) = done
    library = home / "library"
    library.mkdir()
    rng = random.Random(7)
    for _ in range(5):
        proc = subprocess.Popen(
            [*NARRATE, "export", first, "--library", str(library)],
            env=e,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.2, 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for meta in library.rglob("metadata.json"):  # every visible book folder is whole
            folder = meta.parent
            if folder.name.startswith(".narrate-export-"):
                continue
            assert sorted(p.name for p in folder.iterdir()) == FILES
        visible = [p for p in library.rglob("*") if p.is_dir() and "Vol 2" in p.name]
        assert len(visible) <= 1, visible  # one book, never a second edition of the same job
    final = export(e, first, library)
    assert final["note"] in ("exported", "already exported")
    assert [p.name for p in library.glob(".narrate-export-*")] == []  # the killed exports' leftovers swept


def test_export_refuses_what_it_cannot_do(done, home):
    e, (first, _) = done
    for args, said in (
        ((first, "--library", str(home / "nowhere")), "is not a folder"),
        ((first,), "no library: give --library DIR"),
        (("narrate-nope", "--library", str(home)), "narrate-nope"),
    ):
        ran = narrate({k: v for k, v in e.items() if k != "NARRATE_LIBRARY"}, "export", *args)
        assert ran.returncode == 1 and said in ran.stderr and "Traceback" not in ran.stderr, ran.stderr


def test_submit_with_a_library_exports_when_the_job_ends_and_a_failed_export_keeps_the_book(env, home, voice_wav):
    e = fake_env(env, home)
    book = home / "odyssey.epub"
    write_epub(book)
    library = home / "library"
    library.mkdir()
    gone = home / "gone"
    gone.mkdir()
    abs_server = FakeAbs()
    e["NARRATE_ABS_TOKEN"] = FakeAbs.TOKEN  # the worker's: never in the job
    ok = submit(
        e,
        book,
        voice_wav,
        home / "out" / "a.m4b",
        "--narrator",
        "Ann Reader",
        "--library",
        str(library),
        "--abs-url",
        abs_server.url,
    )
    bad = submit(e, book, voice_wav, home / "out" / "b.m4b", "--library", str(gone), "--layout", "flat")
    gone.rmdir()  # the library is gone by the time the worker exports
    try:
        assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    finally:
        abs_server.close()
    first = wait_for_job(ok)
    assert first["status"] == "finished" and first["result"]["library"]["note"] == "exported"
    assert first["result"]["library"]["audiobookshelf"] == "Audiobookshelf library lib-books scanned"
    assert abs_server.calls == [{"path": "/api/libraries/lib-books/scan"}]
    folder = library / "Homer" / "Greek Classics" / "Vol 2 - 2003 - The Odyssey {Ann Reader}"
    assert first["result"]["library"]["folder"] == str(folder) and sorted(p.name for p in folder.iterdir()) == FILES
    second = wait_for_job(bad)
    assert second["status"] == "finished" and "is not a folder" in second["result"]["library"]["error"]
    assert (home / "out" / "b.m4b").is_file() and f"narrate export {bad}" in second["result"]["library"]["error"]
    gone.mkdir()
    assert export(e, bad, gone, "--layout", "flat")["folder"] == str(gone / "The Odyssey")


class FakeAbs:
    """An HTTP server answering as Audiobookshelf's API does for what narrate calls (libraries,
    upload, scan), checking the token, and recording each call (the upload's fields and files)."""

    TOKEN = "abs-api-token-0123456789"

    def __init__(self) -> None:
        import http.server
        import threading
        from email.parser import BytesParser
        from email.policy import default

        from helpers.servers import free_port

        self.port = free_port()
        self.calls: list[dict] = []
        calls, token = self.calls, self.TOKEN

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, status: int, body: bytes = b"OK", kind: str = "text/plain") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _authorized(self) -> bool:
                if self.headers.get("Authorization") != f"Bearer {token}":
                    self._answer(401, b"Unauthorized")
                    return False
                return True

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self._authorized() and self.path == "/api/libraries":
                    libraries = [
                        {"id": "lib-pod", "mediaType": "podcast", "folders": [{"id": "fold-pod"}]},
                        {"id": "lib-books", "mediaType": "book", "folders": [{"id": "fold-1"}]},
                    ]
                    self._answer(200, json.dumps({"libraries": libraries}).encode(), "application/json")

            def do_POST(self) -> None:  # noqa: N802
                if not self._authorized():
                    return
                body = self.rfile.read(int(self.headers["Content-Length"]))
                call: dict = {"path": self.path}
                if self.path == "/api/upload":
                    message = BytesParser(policy=default).parsebytes(
                        f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body
                    )
                    for part in message.iter_parts():
                        name = part.get_param("name", header="content-disposition")
                        if part.get_filename():
                            call.setdefault("files", {})[part.get_filename()] = part.get_payload(decode=True)
                        else:
                            call.setdefault("fields", {})[name] = part.get_content().strip()
                calls.append(call)
                self._answer(200)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_audiobookshelf_gets_an_upload_or_a_scan_with_its_token(done, home, env):
    e, (first, second) = done
    abs_server = FakeAbs()
    try:
        e = {**e, "NARRATE_ABS_TOKEN": FakeAbs.TOKEN}
        uploaded = export(e, first, home, "--abs-url", abs_server.url)  # --library home: a folder, then a scan
        assert uploaded["audiobookshelf"] == "Audiobookshelf library lib-books scanned"
        assert abs_server.calls[-1] == {"path": "/api/libraries/lib-books/scan"}
        ran = narrate(
            {k: v for k, v in e.items() if k != "NARRATE_LIBRARY"},
            "export",
            second,
            "--abs-url",
            abs_server.url,
            "--json",
        )
        assert ran.returncode == 0, ran.stderr
        assert (
            json.loads(ran.stdout)["audiobookshelf"]
            == "uploaded to Audiobookshelf library lib-books and its scan asked for"
        )
        assert abs_server.calls[-1] == {"path": "/api/libraries/lib-books/scan"}  # the upload, then its scan
        call = abs_server.calls[-2]
        assert call["path"] == "/api/upload"
        assert call["fields"] == {
            "title": "The Odyssey",
            "author": "Homer",
            "series": "Greek Classics",
            "library": "lib-books",
            "folder": "fold-1",
        }
        assert sorted(call["files"]) == FILES
        assert json.loads(call["files"]["metadata.json"])["narrate"]["job"] == second
        assert call["files"]["The Odyssey.m4b"][:8][4:] == b"ftyp"
        assert list((home / "exports").iterdir()) == []  # the upload's staging folder is gone

        wrong = narrate(
            {**e, "NARRATE_ABS_TOKEN": "wrong"}, "export", first, "--library", str(home), "--abs-url", abs_server.url
        )
        assert wrong.returncode == 1 and "answered 401" in wrong.stderr and "NARRATE_ABS_TOKEN" in wrong.stderr
        assert "already exported to" in wrong.stderr  # the folder stands; export again once the token is right
    finally:
        abs_server.close()


def test_title_and_series_options_win_over_the_books_own(env, home, voice_wav):
    from mutagen.mp4 import MP4

    e = fake_env(env, home)
    book = home / "odyssey.epub"
    write_epub(book)
    out = home / "out" / "fagles.m4b"
    job_id = submit(e, book, voice_wav, out, "--title", "The Odyssey (Fagles)", "--series", "Epics #3")
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job_id)["status"] == "finished"
    tags = MP4(out).tags  # the output itself, before any export
    assert tags["\xa9nam"] == ["The Odyssey (Fagles)"] and tags["\xa9mvn"] == ["Epics"] and tags["\xa9mvi"] == [3]
    library = home / "library"
    library.mkdir()
    got = export(e, job_id, library)
    assert got["folder"] == str(library / "Homer" / "Epics" / "Vol 3 - 2003 - The Odyssey (Fagles) {narrate}")
    data = json.loads((library / got["folder"] / "metadata.json").read_text())
    assert data["title"] == "The Odyssey (Fagles)" and data["series"] == ["Epics #3"]


def test_a_book_split_into_chapter_files_exports_them_as_its_tracks(env, home, voice_wav):
    from mutagen.mp4 import MP4

    e = fake_env(env, home)
    book = home / "odyssey.epub"
    write_epub(book)
    job_id = submit(e, book, voice_wav, home / "out" / "split.m4b", "--split", "chapters", "--subtitles", "srt")
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job_id)["status"] == "finished"
    library = home / "library"
    library.mkdir()
    folder = Path(export(e, job_id, library, "--layout", "flat")["folder"])
    tracks = sorted(p for p in folder.iterdir() if p.suffix == ".m4b")
    assert [p.name for p in tracks] == ["split - 01 - Book 1.m4b", "split - 02 - Book 2.m4b"]
    for n, track in enumerate(tracks, 1):
        tags = MP4(track).tags
        assert tags["\xa9alb"] == ["The Odyssey"] and tags["\xa9nam"] == [f"Book {n}"] and tags["\xa9ART"] == ["Homer"]
    assert not [p for p in folder.iterdir() if p.suffix == ".srt"]  # subtitles follow a book file, not tracks


def test_a_read_along_books_files_go_with_it_named_as_its_audio(env, home, voice_wav):
    """A book written with its read-along EPUB, both manifests, subtitles and word timings: the folder holds each
    of them named after the title, as the audio is; the manifests and their table of contents point at the
    folder's names (still valid against their schemas); the EPUB is the job's, byte for byte."""
    from helpers.readalong import readium_validator, w3c_validator
    from narrate.jobs.outputs.ownership import sha256_file

    e = fake_env(env, home)
    book = home / "odyssey.epub"
    write_epub(book)
    out = home / "out" / "odyssey.m4b"
    job_id = submit(
        e, book, voice_wav, out, "--readalong", "epub,manifest,w3c", "--subtitles", "vtt,json", "--word-timings"
    )
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job_id)["status"] == "finished"
    library = home / "library"
    library.mkdir()
    folder = Path(export(e, job_id, library, "--layout", "flat")["folder"])
    assert folder == library / "The Odyssey"
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(
        [
            *FILES,
            "The Odyssey.epub",
            "The Odyssey.audiobook.json",
            "The Odyssey.publication.json",
            "The Odyssey.toc.html",
            "The Odyssey.vtt",
            "The Odyssey.words.vtt",
        ]
    )
    assert sha256_file(folder / "The Odyssey.epub") == sha256_file(home / "out" / "odyssey.epub")
    assert (folder / "The Odyssey.words.vtt").read_text() == (home / "out" / "odyssey.words.vtt").read_text()
    assert (folder / "The Odyssey.vtt").read_text() == (home / "out" / "odyssey.vtt").read_text()
    readium = json.loads((folder / "The Odyssey.audiobook.json").read_text())
    assert readium["links"][0]["href"] == "The%20Odyssey.audiobook.json"
    assert readium["readingOrder"][0]["href"] == "The%20Odyssey.m4b"
    assert all(t["href"].startswith("The%20Odyssey.m4b#t=") for t in readium["toc"])
    assert readium_validator().is_valid(readium)
    w3c = json.loads((folder / "The Odyssey.publication.json").read_text())
    assert (
        w3c["readingOrder"][0]["url"] == "The%20Odyssey.m4b" and w3c["resources"][0]["url"] == "The%20Odyssey.toc.html"
    )
    assert w3c_validator().is_valid(w3c)
    toc = (folder / "The Odyssey.toc.html").read_text()
    assert 'href="The%20Odyssey.publication.json"' in toc and 'href="The%20Odyssey.m4b#t=' in toc
    assert "odyssey.m4b" not in toc and "odyssey.m4b" not in json.dumps([readium, w3c])
