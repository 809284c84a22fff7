"""A book writer SIGKILLed while it copies the book into the output directory leaves a temp file
and a scratch directory there; the next writer on the host removes both."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.encode import write_book
from helpers.faults import partials

TESTS = Path(__file__).resolve().parent.parent

KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from helpers.encode import write_book
from narrate.jobs.audio import book_writer

def copy(src, dst, *args, **kw):
    dst.write(src.read(1000))
    dst.flush()
    os.kill(os.getpid(), signal.SIGKILL)

book_writer.shutil.copyfileobj = copy
write_book(Path(sys.argv[1]), root=Path(sys.argv[2]), workdir=Path(sys.argv[3]))
"""


def test_writer_killed_mid_copy_is_cleaned_up_by_the_next_one(tmp_path):
    """SIGKILL while the book is copied into the output directory leaves a temp file there and
    a scratch directory; the next writer on the host removes both."""
    root, work = tmp_path / "root", tmp_path / "work"
    for d in (root, work):
        d.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(root / "d" / "book.mp3"), str(root), str(work)],
        capture_output=True,
        text=True,
        cwd=TESTS,
    )
    assert proc.returncode == -9, proc.stderr
    assert partials(root) and list(work.iterdir())  # what the kill left behind
    write_book(root / "other.mp3", root=root, workdir=work)
    assert partials(root, work) == [] and list(work.iterdir()) == [] and not (root / "d" / "book.mp3").exists()
