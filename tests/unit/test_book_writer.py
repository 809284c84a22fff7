"""BookWriter writes only inside its output root: through directory descriptors opened without
following links, into a short-named temp file, renamed in place after checking that the
directory is still the one under the root. It never opens an existing target, and a failed or
killed writer leaves nothing behind in the output directory."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import wave
from pathlib import Path

import pytest
from helpers.encode import FFMPEG, TONE, write_book
from helpers.faults import partials
from narrate.jobs.audio import book_writer
from narrate.jobs.audio.book_writer import BookWriter
from narrate.jobs.errors import BadInput
from narrate.jobs.outputs.outputs import OutputRoot

TESTS = Path(__file__).resolve().parents[1]  # where the child processes find helpers/


@pytest.fixture
def tree(tmp_path):
    root, outside, work = tmp_path / "root", tmp_path / "outside", tmp_path / "work"
    for d in (root, outside, work):
        d.mkdir()
    return root, outside, work


@pytest.mark.parametrize("ext", [".wav", ".mp3", ".m4b"])
def test_writes_inside_the_root_and_creates_directories(tree, ext):
    root, _, work = tree
    final = write_book(root / "a" / "b" / f"book{ext}", root=root, workdir=work)
    assert final.stat().st_size > 1000 and partials(root, work) == []
    assert [p.name for p in work.iterdir()] == []  # the private scratch directory is gone too


def test_long_name_fits_because_temp_names_are_short(tree):
    """Temp names do not embed the final name: a 250-byte name is written (it used to fail
    with 'File name too long' after the whole book, and a half-open wave writer)."""
    root, _, work = tree
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from helpers.encode import write_book; from pathlib import Path; "
            "write_book(Path(sys.argv[1]), root=Path(sys.argv[2]), workdir=Path(sys.argv[3]))",
            str(root / ("n" * 246 + ".mp3")),
            str(root),
            str(work),
        ],
        capture_output=True,
        text=True,
        cwd=TESTS,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert (root / ("n" * 246 + ".mp3")).exists()


def test_failing_enter_leaves_no_half_open_writer(tree):
    """A writer whose scratch directory cannot be made raises one clear OSError: no
    AttributeError from a half-open wave writer, nothing left behind."""
    root, _, work = tree
    blocker = work / "file"
    blocker.write_text("x")
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from helpers.encode import write_book; from pathlib import Path; "
            "write_book(Path(sys.argv[1]), root=Path(sys.argv[2]), workdir=Path(sys.argv[3]))",
            str(root / "book.mp3"),
            str(root),
            str(blocker / "sub"),
        ],
        capture_output=True,
        text=True,
        cwd=TESTS,
    )
    assert proc.returncode == 1 and "NotADirectoryError" in proc.stderr, proc.stderr
    assert "AttributeError" not in proc.stderr and "Exception ignored" not in proc.stderr
    assert partials(root) == [] and list(root.iterdir()) == []


def swap_during_copy(monkeypatch, action) -> None:
    """Run `action` after the book was copied into its temp file, before the rename."""
    real = shutil.copyfileobj

    def copy(*args, **kw):
        real(*args, **kw)
        action()

    monkeypatch.setattr(book_writer.shutil, "copyfileobj", copy)


def test_directory_swapped_for_a_symlink_before_the_rename(tree, monkeypatch):
    root, outside, work = tree
    (root / "sub").mkdir()

    def swap():
        (root / "sub").rename(root.parent / "moved")
        (root / "sub").symlink_to(outside)

    swap_during_copy(monkeypatch, swap)
    with pytest.raises(BadInput, match="sub under the output root .* is a symlink"):
        write_book(root / "sub" / "book.flac", root=root, workdir=work)
    assert list(outside.iterdir()) == [] and list((root.parent / "moved").iterdir()) == []
    assert partials(root.parent) == []


def test_directory_swapped_for_another_directory_before_the_rename(tree, monkeypatch):
    root, _, work = tree
    (root / "sub").mkdir()

    def swap():
        (root / "sub").rename(root.parent / "moved")
        (root / "sub").mkdir()

    swap_during_copy(monkeypatch, swap)
    with pytest.raises(BadInput, match="moved or replaced"):
        write_book(root / "sub" / "book.mp3", root=root, workdir=work)
    assert list((root / "sub").iterdir()) == [] and list((root.parent / "moved").iterdir()) == []


def test_root_parent_swapped_before_the_rename(tmp_path, monkeypatch):
    base, outside, work = tmp_path / "base", tmp_path / "outside", tmp_path / "work"
    for d in (base / "root", outside / "root", work):
        d.mkdir(parents=True)

    def swap():
        base.rename(tmp_path / "moved")
        base.symlink_to(outside)

    swap_during_copy(monkeypatch, swap)
    with pytest.raises(BadInput, match="output root"):
        write_book(base / "root" / "book.mp3", root=base / "root", workdir=work)
    assert list((outside / "root").iterdir()) == [] and list((tmp_path / "moved" / "root").iterdir()) == []


def test_disk_full_during_the_copy_leaves_the_old_output_and_no_temp(tree, monkeypatch):
    root, _, work = tree
    (root / "book.mp3").write_bytes(b"old book")

    def full(src, dst, *args, **kw):
        dst.write(src.read(1000))
        dst.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(book_writer.shutil, "copyfileobj", full)
    with pytest.raises(OSError, match="No space left"):
        write_book(root / "book.mp3", root=root, workdir=work)
    assert (root / "book.mp3").read_bytes() == b"old book" and partials(root, work) == []
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("swapped", ["base", "base/root"])
def test_root_pinned_at_job_start(tmp_path, swapped):
    """The root is pinned when the job starts: a root (or a parent of it) swapped for a symlink
    before the stitch is refused."""
    (tmp_path / "base" / "root").mkdir(parents=True)
    (tmp_path / "outside" / "root").mkdir(parents=True)
    pinned = OutputRoot.pin(tmp_path / "base" / "root")
    (tmp_path / swapped).rename(tmp_path / "moved")
    (tmp_path / swapped).symlink_to(tmp_path / "outside" / swapped.removeprefix("base").strip("/"))
    with pytest.raises(BadInput, match="no longer the directory it was when the job started"):
        write_book(pinned.path / "book.wav", root=pinned, workdir=tmp_path / "work")
    assert list((tmp_path / "outside" / "root").iterdir()) == []


def test_symlinked_directory_inside_the_root_is_refused(tree):
    """Links below the root are never followed, even to a directory inside the root (submit
    resolves them to the real path before the job is made)."""
    root, _, work = tree
    (root / "real").mkdir()
    (root / "link").symlink_to(root / "real")
    with pytest.raises(BadInput, match="symlink"):
        write_book(root / "link" / "book.mp3", root=root, workdir=work)
    assert list((root / "real").iterdir()) == [] and partials(root, work) == []


def test_root_that_is_a_symlink_is_followed(tree):
    root, _, work = tree
    (root.parent / "rootlink").symlink_to(root)
    write_book(root.parent / "rootlink" / "book.mp3", root=root.parent / "rootlink", workdir=work)
    assert (root / "book.mp3").exists()


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo", "file"])
def test_existing_target_entry_is_replaced_never_written_through(tree, kind):
    root, outside, work = tree
    secret = outside / "secret"
    secret.write_text("keep")
    target = root / "book.wav"
    if kind == "symlink":
        target.symlink_to(secret)
    elif kind == "hardlink":
        os.link(secret, target)
    elif kind == "fifo":
        os.mkfifo(target)  # opening it for writing would block forever
    else:
        target.write_text("old")
    write_book(target, root=root, workdir=work)
    assert secret.read_text() == "keep" and target.is_file() and not target.is_symlink()
    with wave.open(str(target)) as w:
        assert w.getnframes() == 4800 * 2 + 2400


def test_directory_at_the_target_fails_cleanly(tree):
    root, _, work = tree
    (root / "book.mp3").mkdir()
    with pytest.raises(BadInput, match="is a directory"):
        write_book(root / "book.mp3", root=root, workdir=work)
    assert partials(root, work) == [] and list((root / "book.mp3").iterdir()) == []


def test_two_writers_on_one_path_at_once(tree):
    root, _, work = tree
    errors: list[BaseException] = []

    def one():
        try:
            for _ in range(3):
                write_book(root / "same.mp3", root=root, workdir=work)
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and [p.name for p in root.iterdir()] == ["same.mp3"] and partials(root, work) == []


def test_output_root_on_another_filesystem_than_the_scratch_dir(tmp_path):
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs a second filesystem (/dev/shm on Linux)")
    root = Path(tempfile.mkdtemp(prefix="nrt-root-", dir=shm))
    try:
        write_book(root / "x" / "book.m4a", root=root, workdir=tmp_path / "work")
        assert (root / "x" / "book.m4a").stat().st_size > 1000 and partials(root, tmp_path) == []
    finally:
        shutil.rmtree(root)


def test_live_writer_scratch_is_not_swept(tree):
    root, _, work = tree
    with BookWriter(root / "a.wav", FFMPEG, root=root, workdir=work) as first:
        first.add(TONE)
        write_book(root / "b.wav", root=root, workdir=work)
        first.finish()
    assert (root / "a.wav").exists() and (root / "b.wav").exists() and partials(root, work) == []
