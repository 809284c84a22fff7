"""Library folders: the names of each layout, hostile titles made safe (no separators, no hidden
folder, no climbing out), and a job spec's library checked as the worker reads it."""

from __future__ import annotations

import pytest
from narrate.jobs.api.options import Options
from narrate.jobs.book.spec import BadSpec, JobSpec
from narrate.jobs.library.layout import folder, safe_part
from narrate.jobs.library.metadata import BookInfo, abs_json


def info(**kw) -> BookInfo:
    base = {"title": "The Odyssey", "authors": ["Homer"], "narrators": ["Ann"], "job_id": "narrate-1"}
    return BookInfo(**{**base, **kw})


def test_each_layout_names_the_folder():
    assert (
        str(folder(info(series="Greek", series_index="2", year="2003"), "abs"))
        == "Homer/Greek/Vol 2 - 2003 - The Odyssey {Ann}"
    )
    assert str(folder(info(year="2003"), "abs")) == "Homer/2003 - The Odyssey {Ann}"
    assert str(folder(info(authors=[], narrators=[]), "abs")) == "Unknown Author/The Odyssey"
    assert str(folder(info(), "plex")) == "Homer/The Odyssey"
    assert str(folder(info(), "flat")) == "The Odyssey"


@pytest.mark.parametrize("title", ["../../etc", "a/b\\c", ".hidden", "  ", "x" * 500, 'what?*:"<>|', "\x00\x1f"])
def test_a_hostile_title_stays_one_visible_folder(title):
    made = folder(info(title=title, authors=[title]), "abs")
    assert len(made.parts) == 2 and all(p and not p.startswith(".") and "/" not in p for p in made.parts)
    assert all(len(p) <= 120 for p in made.parts) and ".." not in made.parts
    assert safe_part("", "fallback") == "fallback"


def test_series_reads_as_audiobookshelf_writes_it():
    data = abs_json(info(series="Greek Classics", series_index="2.5"))
    assert data["series"] == ["Greek Classics #2.5"] == data["metadata"]["series"]
    assert abs_json(info())["series"] == []


def test_a_spec_library_must_be_an_absolute_path_and_the_json_is_unchanged_without_one():
    spec = {"document": "0" * 64, "voice": "0" * 64, "output": "a.mp3"}
    assert "library" not in JobSpec.from_json(spec).to_json()
    assert JobSpec.from_json({**spec, "library": "/srv/books"}).library == "/srv/books"
    for bad in ({"library": "books"}, {"library": "/x", "library_layout": "kindle"}, {"library": 7}):
        with pytest.raises(BadSpec):
            JobSpec.from_json({**spec, **bad})
    assert "library" not in Options.make().to_json()
    made = Options.make(library="/srv/books", library_layout="plex")
    assert Options.from_json(made.to_json()) == made


def test_exports_of_one_job_at_once_make_one_folder_and_of_two_books_two(tmp_path):
    """Eight threads export the same job (the worker's export and a person's, at once): one folder,
    the others answer "already exported"; another job of the same name gets " (2)"."""
    import threading

    from narrate.jobs.library.export import export_files

    track = tmp_path / "book.wav"
    track.write_bytes(b"RIFF" + b"\0" * 64)  # copied, never decoded (wav carries no tags here)
    library = tmp_path / "library"
    library.mkdir()
    notes: list[str] = []

    def one(job_id: str) -> None:
        notes.append(export_files(library, "flat", info(job_id=job_id), [track], [], None).note)

    threads = [threading.Thread(target=one, args=("narrate-1",)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(notes) == ["already exported"] * 7 + ["exported"], notes
    assert [p.name for p in library.iterdir()] == ["The Odyssey"]
    one("narrate-2")
    assert notes[-1] == "exported as The Odyssey (2) (The Odyssey holds another book)"
    assert sorted(p.name for p in library.iterdir()) == ["The Odyssey", "The Odyssey (2)"]
