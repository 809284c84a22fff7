"""Input files that are not plain files, or stop being plain files: FIFOs, devices, symbolic link
tricks, files larger than they say. Each is refused with one clear line, without hanging."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from pathlib import Path

import pytest
from helpers.cli import invoke
from narrate.jobs.audio.samples import read_voice
from narrate.jobs.documents.documents import read_document
from narrate.jobs.errors import BadInput
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.inputs import read_input


def refused_within(seconds: float, fn, *args) -> BadInput:
    """Run fn(*args) in a thread; it must raise BadInput before `seconds` pass (a hang fails)."""
    box: dict = {}

    def run() -> None:
        try:
            fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{fn.__name__}{args} hung"
    assert isinstance(box.get("error"), BadInput), box
    return box["error"]


def test_fifo_devices_and_directories_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "book.txt"
    os.mkfifo(fifo)
    link = tmp_path / "voice.wav"
    link.symlink_to(fifo)
    cases = [
        (read_document, fifo, "a named pipe"),
        (read_document, Path("/dev/zero"), "a character device"),
        (read_document, tmp_path, "a directory"),
        (lambda p: read_voice(p, ffmpeg_exe()), link, "a named pipe"),
    ]
    for fn, path, kind in cases:
        e = refused_within(5, fn, path)
        assert "is not a regular file" in str(e) and kind in str(e), e


def test_a_fifo_swapped_in_after_the_check_does_not_hang(tmp_path, monkeypatch):
    """Between the check and the open, the file is replaced by a FIFO nobody writes to."""
    plain = tmp_path / "plain.txt"
    plain.write_text("Some text.")
    fifo = tmp_path / "book.txt"
    os.mkfifo(fifo)
    real_stat = os.stat

    def stale_stat(path, *args, **kwargs):  # what the check saw: a regular file
        return real_stat(plain if str(path) == str(fifo) else path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stale_stat)
    try:
        e = refused_within(5, read_input, fifo, f"document {fifo}", 1000)
    finally:  # a reader blocked on the FIFO (the defect) is released by opening the write end
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert "a named pipe" in str(e)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_a_file_larger_than_its_stated_size_is_read_no_further_than_the_limit():
    """/proc files say they are empty; the read must stop at the limit anyway."""
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0 and len(status.read_bytes()) > 100
    with pytest.raises(BadInput, match="larger than"):
        read_input(status, "document /proc/self/status", 100)


def test_symbolic_link_loops_and_broken_links_say_so(tmp_path):
    a, b, broken = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "broken.txt"
    a.symlink_to(b)
    b.symlink_to(a)
    broken.symlink_to(tmp_path / "gone.txt")
    with pytest.raises(BadInput, match="is a symbolic link loop"):
        read_document(a)
    with pytest.raises(BadInput, match=r"does not exist \(it is a broken symbolic link\)"):
        read_document(broken)


def test_a_link_to_an_unreadable_file(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("Hidden.")
    secret.chmod(0)
    link = tmp_path / "link.txt"
    link.symlink_to(secret)
    if os.geteuid() == 0:
        pytest.skip("root reads anything")
    with pytest.raises(BadInput, match="not readable"):
        read_document(link)


def test_a_file_name_with_a_newline_and_an_escape_sequence_gives_one_plain_line(env, home, voice_wav):
    name = home / "a\nb\x1b[31mred.txt"  # legal on Linux and macOS
    proc = invoke(env, "submit", str(name), "--voice", str(voice_wav), "-o", str(home / "out" / "x.mp3"))
    err = proc.stderr.strip()
    assert proc.returncode != 0 and len(err.splitlines()) == 1 and "\x1b" not in err, err
    assert err.startswith("Error: document ") and "a\\nb\\x1b[31mred.txt does not exist" in err, err


def test_a_document_whose_name_is_not_utf8(env, home, voice_wav, external_redis):
    """Linux file names are bytes; Python hands the stray ones over as surrogates, which cannot be
    stored or encoded. The title gets U+FFFD; a default output name needs -o."""
    raw_name = os.fsencode(home) + b"/caf\xe9 \x07book.txt"
    try:
        fd = os.open(raw_name, os.O_WRONLY | os.O_CREAT, 0o644)
    except OSError:
        pytest.skip("this file system only takes UTF-8 names (macOS)")
    os.write(fd, b"A fine sentence.")
    os.close(fd)
    doc = Path(os.fsdecode(raw_name))
    assert read_document(doc).title == "caf\ufffd book"
    proc = invoke(env, "submit", str(doc), "--voice", str(voice_wav), cwd=home / "out")
    err = proc.stderr.strip()
    assert proc.returncode != 0 and len(err.splitlines()) == 1, err
    assert "caf\\udce9 \\x07book.mp3 has bytes in its name that are not UTF-8; choose another name (-o)" in err, err
    assert external_redis.dbsize() == 0
    proc = invoke(env, "submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "book.mp3"))
    assert proc.returncode == 0 and proc.stdout.startswith("narrate-"), proc.stderr
