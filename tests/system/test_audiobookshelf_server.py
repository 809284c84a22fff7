"""narrate's books in a real Audiobookshelf (2.36.0, from tests/fixtures/audiobookshelf, started by
helpers/abs_server.py): five books narrated (fake engine, embedded server) from EPUBs with a title,
authors, a description and a cover: one m4b, one split into chapter files, one in a series with a
sequence, one read by a cast of voices with its narrators listed, exported into a library folder
of the server (the last export with `--abs-url`, which asks for the scan); and one uploaded with
`--abs-url` alone. What the server then shows through its API is narrate's: title, authors,
narrators, series and sequence, description, chapters (titles, start and end within 50 ms of
narrate's own), duration, tracks, cover; the same book uploaded again is refused. Skipped, saying
what is missing, where the server cannot be built (no node, npm or ffprobe; `npm ci` failed)."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers.abs_server import AbsServer, Unavailable, build
from helpers.audio import write_voice
from helpers.cli import invoke
from helpers.fake import fake_env
from helpers.procs import narrate, wait_for_job

TOLERANCE_S = 0.05


@pytest.fixture(scope="module")
def abs_build() -> Path:
    try:
        return build()
    except Unavailable as e:
        pytest.skip(f"no Audiobookshelf test server: {e}")


@pytest.fixture
def abs_server(abs_build, tmp_path):
    server = AbsServer(abs_build, tmp_path / "abs").start()
    try:
        yield server
    finally:
        server.stop()


def cover_jpeg(rgb: tuple[int, int, int]) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (96, 96), rgb).save(out, "JPEG")
    return out.getvalue()


@dataclass
class Book:
    key: str
    title: str
    authors: list[str]
    description: str
    chapters: list[tuple[str, str]]  # (heading, text)
    narrators: list[str]
    cover: bytes
    series: tuple[str, str] | None = None  # (name, sequence)
    series_option: bool = False  # the series by `--series "Name #N"`, else in the EPUB's calibre metadata
    args: list[str] = field(default_factory=list)  # more submit options
    job: str = ""


def write_book_epub(path: Path, book: Book) -> Path:
    from ebooklib import epub

    b = epub.EpubBook()
    b.set_identifier(f"urn:uuid:narrate-abs-{book.key}")
    b.set_title(book.title)
    b.set_language("en")
    for author in book.authors:
        b.add_author(author)
    b.add_metadata("DC", "publisher", "Harbor Press")
    b.add_metadata("DC", "date", "2021-06-01")
    b.add_metadata("DC", "description", f"<p>{book.description}</p>")
    if book.series and not book.series_option:
        b.add_metadata(None, "meta", "", {"name": "calibre:series", "content": book.series[0]})
        b.add_metadata(None, "meta", "", {"name": "calibre:series_index", "content": book.series[1]})
    b.set_cover("cover.jpg", book.cover)
    pages = []
    for n, (heading, text) in enumerate(book.chapters, 1):
        page = epub.EpubHtml(title=heading, file_name=f"c{n}.xhtml", lang="en")
        page.content = f"<h1>{heading}</h1>" + "".join(f"<p>{p}</p>" for p in text.split("\n\n"))
        b.add_item(page)
        pages.append(page)
    b.toc = pages
    b.spine = ["nav", *pages]
    b.add_item(epub.EpubNcx())
    b.add_item(epub.EpubNav())
    epub.write_epub(str(path), b)
    return path


def books(alice_wav: Path) -> list[Book]:
    return [
        Book(
            "single",
            "The Lighthouse Keeper",
            ["Ada North", "Ben South"],
            "A keeper and his lamp, one winter.",
            [
                ("Arrival", "The keeper climbed the stairs. The lamp was cold."),
                ("The Storm", "Rain hammered the glass. Ships waited."),
                ("Dawn", "Morning came at last."),
            ],
            ["Ann Reader"],
            cover_jpeg((200, 40, 40)),
        ),
        Book(
            "split",
            "Tales of the Fjord",
            ["Cora West"],
            "Three short tales told by the water.",
            [
                ("The Ferry", "A ferry crossed twice a day."),
                ("The Net", "Nets dried on the rocks."),
                ("The Bell", "A bell rang for the last boat."),
            ],
            ["Dan Voice"],
            cover_jpeg((40, 160, 40)),
            args=["--split", "chapters"],
        ),
        Book(
            "series",
            "The Second Tide",
            ["Ada North"],
            "The keeper's daughter takes the lamp.",
            [("Return", "She came back in spring."), ("Light", "The lamp burned again.")],
            ["Ann Reader"],
            cover_jpeg((40, 40, 200)),
            series=("Sea Stories", "2"),
        ),
        Book(
            "cast",
            "Voices at Sea",
            ["Eve East"],
            "A crossing told in two voices.",
            [
                ("Departure", "The boat left at dusk.\n\n\u201cWe should turn back now.\u201d\n\nNobody answered."),
                ("Landfall", "Land rose out of the fog.\n\n\u201cThere it is, at last.\u201d"),
            ],
            ["Ann Reader", "Alice Sample"],
            cover_jpeg((200, 200, 40)),
            args=["--dialogue-voice", str(alice_wav)],
        ),
        Book(
            "upload",
            "The Far Shore",
            ["Finn North"],
            "The last of the sea stories.",
            [("Crossing", "The far shore was green."), ("Home", "They built a house there.")],
            ["Ann Reader"],
            cover_jpeg((120, 40, 160)),
            series=("Sea Stories", "3"),
            series_option=True,
        ),
    ]


def ran_ok(env: dict, *args: str) -> dict:
    """`narrate ARGS --json` in this process (a process each would take seconds on a busy machine)."""
    ran = invoke(env, *args, "--json")
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout.splitlines()[0])


def narrated(result: dict) -> list[tuple[float, float, str]]:
    """narrate's chapters of a finished job: (start s, end s, title), the last ending with the book."""
    marks = result["chapters"]
    starts = [m["start_seconds"] for m in marks] + [result["duration_seconds"]]
    return [(starts[i], starts[i + 1], m["title"]) for i, m in enumerate(marks)]


def differences(book: Book, item: dict, result: dict, cover: tuple[str, bytes]) -> list[str]:
    """What Audiobookshelf shows of `book` (GET /api/items/{id}?expanded=1) that is not narrate's."""
    media, meta = item["media"], item["media"]["metadata"]
    wrong = []

    def same(what: str, shown: object, expected: object) -> None:
        if shown != expected:
            wrong.append(f"{what}: Audiobookshelf shows {shown!r}, narrate's is {expected!r}")

    def near(what: str, shown: float, expected: float) -> None:
        if abs(float(shown) - expected) > TOLERANCE_S:
            wrong.append(f"{what}: Audiobookshelf shows {shown}, narrate's is {expected} (over {TOLERANCE_S} s apart)")

    same("title", meta["title"], book.title)
    same("authors", sorted(a["name"] for a in meta["authors"]), sorted(book.authors))  # kept only for new authors
    same("narrators", meta["narrators"], book.narrators)
    same("series", [(s["name"], s["sequence"]) for s in meta["series"]], [book.series] if book.series else [])
    same("description", meta["description"], book.description)
    same("publisher", meta["publisher"], "Harbor Press")
    same("published year", meta["publishedYear"], "2021")
    near("duration", media["duration"], result["duration_seconds"])
    chapters = narrated(result)
    same("chapter titles", [c["title"] for c in media["chapters"]], [t for _, _, t in chapters])
    for shown, (start, end, title) in zip(media["chapters"], chapters, strict=False):
        near(f"start of chapter {title!r}", shown["start"], start)
        near(f"end of chapter {title!r}", shown["end"], end)
    tracks = media["audioFiles"]
    if "--split" in book.args:  # one track a chapter, in order, each chapter starting within its own track
        same(
            "tracks",
            [t["metadata"]["filename"] for t in tracks],
            [f"{book.key} - {n:02d} - {t}.m4b" for n, (_, _, t) in enumerate(chapters, 1)],
        )
        at = 0.0
        for track, (start, _, title) in zip(tracks, chapters, strict=False):
            if not at - TOLERANCE_S <= start <= at + track["duration"]:
                wrong.append(
                    f"chapter {title!r} starts at {start} s, outside its track ({at} to {at + track['duration']} s)"
                )
            at += track["duration"]
    else:  # the book file's own chapter marks, as the server's ffprobe reads them
        same("tracks", [t["metadata"]["filename"] for t in tracks], [f"{book.title}.m4b"])
        embedded = tracks[0]["chapters"] if tracks else []
        same("embedded chapter titles", [c["title"] for c in embedded], [t for _, _, t in chapters])
        for shown, (start, end, title) in zip(embedded, chapters, strict=False):
            near(f"embedded start of chapter {title!r}", shown["start"], start)
            near(f"embedded end of chapter {title!r}", shown["end"], end)
    if not media.get("coverPath") or Path(media["coverPath"]).name != "cover.jpg":
        wrong.append(f"cover: Audiobookshelf's is {media.get('coverPath')!r}, not the folder's cover.jpg")
    same("cover served", (cover[0], cover[1] == book.cover), ("image/jpeg", True))
    return wrong


def test_narrated_books_read_back_from_a_real_audiobookshelf(env, home, voice_wav, abs_server, tmp_path):
    e = fake_env(env, home)
    e.pop("NARRATE_LIBRARY", None)
    library = tmp_path / "audiobooks"
    library.mkdir()
    token = abs_server.create_root()
    lib = abs_server.create_book_library("Audiobooks", library)["id"]
    all_books = books(write_voice(tmp_path / "alice.wav", seconds=2.0, amplitude=0.25))
    for book in all_books:
        epub = write_book_epub(home / f"{book.key}.epub", book)
        out = home / "out" / f"{book.key}.m4b"
        series = ["--series", f"{book.series[0]} #{book.series[1]}"] if book.series and book.series_option else []
        book.job = ran_ok(
            e,
            "submit",
            str(epub),
            "--voice",
            str(voice_wav),
            "-o",
            str(out),
            "--narrator",
            ", ".join(book.narrators),
            *series,
            *book.args,
        )["id"]
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    results = {b.key: wait_for_job(b.job) for b in all_books}
    assert all(r["status"] == "finished" for r in results.values()), results
    results = {key: r["result"] for key, r in results.items()}
    assert sorted(results["cast"]["voices"]) == ["dialogue", "narrator"]  # read by two voices

    # Four into the library's folder, the last of them telling the server (which asks for the scan).
    *in_folder, last, uploaded = all_books
    folders = {b.key: ran_ok(e, "export", b.job, "--library", str(library))["folder"] for b in in_folder}
    told = {**e, "NARRATE_ABS_TOKEN": token}
    got = ran_ok(told, "export", last.job, "--library", str(library), "--abs-url", abs_server.url)
    assert got["audiobookshelf"] == f"Audiobookshelf library {lib} scanned", got
    folders[last.key] = got["folder"]
    abs_server.wait_for_scan(lib, None)
    # One uploaded: no library folder here, the server files it as Author/Series/Title and scans.
    scanned = abs_server.library(lib)["lastScan"]
    got = ran_ok(told, "export", uploaded.job, "--abs-url", abs_server.url)
    assert got["audiobookshelf"] == f"uploaded to Audiobookshelf library {lib} and its scan asked for", got
    abs_server.wait_for_scan(lib, scanned)
    folders[uploaded.key] = str(library / "Finn North" / "Sea Stories" / "The Far Shore")
    assert sorted(p.name for p in Path(folders[uploaded.key]).iterdir()) == [
        "The Far Shore.m4b",
        "cover.jpg",
        "desc.txt",
        "metadata.json",
        "metadata.opf",
        "reader.txt",
    ]

    items = {i["media"]["metadata"]["title"]: i for i in abs_server.items(lib)}
    assert sorted(items) == sorted(b.title for b in all_books), abs_server.tail()
    wrong = {}
    for book in all_books:
        item = abs_server.item(items[book.title]["id"])
        found = differences(book, item, results[book.key], abs_server.cover(item["id"]))
        if item["relPath"] != str(Path(folders[book.key]).relative_to(library)):
            found.append(f"folder: Audiobookshelf's is {item['relPath']!r}, narrate's {folders[book.key]!r}")
        if found:
            wrong[book.title] = found
    assert not wrong, json.dumps(wrong, indent=1)

    # The same book uploaded again: the server would write into its folder; narrate refuses first.
    before = {p.name: p.stat().st_mtime_ns for p in Path(folders[uploaded.key]).iterdir()}
    again = invoke(told, "export", uploaded.job, "--abs-url", abs_server.url)
    assert again.returncode == 1 and "already has a folder 'Finn North/Sea Stories/The Far Shore'" in again.stderr
    assert "Traceback" not in again.stderr, again.stderr
    assert {p.name: p.stat().st_mtime_ns for p in Path(folders[uploaded.key]).iterdir()} == before
