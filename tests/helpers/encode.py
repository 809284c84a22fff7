"""The book's encode and write: a short book written by narrate's BookWriter, and the stitch of a
minute of speech-like audio (tests/bench/stitch_bench.py) run in a child process, to fault it from
outside: a file-size limit (a full disk) or a SIGKILL while ffmpeg encodes. Shared by the book
writer tests and the segmented (m4b, mp3) and streamed (ogg/flac) encode tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
from narrate.jobs.audio.book_writer import BookWriter, int16_segment
from narrate.jobs.ffmpeg import ffmpeg_exe

from helpers.procs import exited, file_size_limit, wait_until

FFMPEG = ffmpeg_exe()
TONE = int16_segment((np.sin(np.arange(4800) / 5) * 8000).astype(np.int16))


def write_book(final: Path, root=None, workdir: Path | None = None, **kw) -> Path:
    """A short book (a tone, a pause, the tone) written to `final` by narrate's BookWriter."""
    with BookWriter(final, FFMPEG, title="T", root=root, workdir=workdir, **kw) as book:
        book.add(TONE)
        book.pause(100)
        book.add(TONE)
        return book.finish()


_STITCH = (
    "import sys, time, pathlib\n"
    "sys.path.insert(0, sys.argv[7])  # tests/bench: the stitch benchmark\n"
    "import stitch_bench\n"
    "from narrate.jobs.audio import segment_encoder\n"
    "from narrate.jobs.book.spec import JobSpec\n"
    "root, tmp, output, per_chapter, unit_s = sys.argv[1:6]\n"
    "root, tmp = pathlib.Path(root), pathlib.Path(tmp)\n"
    "if sys.argv[6] == 'stuck':  # the first segment rendered, then hold still until killed\n"
    "    real = segment_encoder.render_segment\n"
    "    def stuck(seg, stream, gains, write, alive):\n"
    "        real(seg, stream, gains, write, alive)\n"
    "        print('ENCODING', flush=True)\n"
    "        time.sleep(600)\n"
    "    segment_encoder.render_segment = stuck\n"
    "plan, store = stitch_bench.make_book(root, 1 / 60, per_chapter=int(per_chapter))\n"
    "spec = JobSpec(document='d', voice='a' * 64, output=output)\n"
    "stitch_bench.segmented(plan, store, spec, tmp / 'out' / output, tmp / 's', None, unit_s=float(unit_s))\n"
)


def _args(root: Path, tmp: Path, output: str, per_chapter: int, unit_s: float, mode: str) -> list[str]:
    bench = str(Path(__file__).resolve().parents[1] / "bench")
    return [sys.executable, "-c", _STITCH, str(root), str(tmp), output, str(per_chapter), str(unit_s), mode, bench]


def ffmpeg_children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-A", "-o", "pid=,ppid=,comm="], capture_output=True, text=True).stdout
    rows = [line.split(None, 2) for line in out.splitlines()]
    return [int(r[0]) for r in rows if len(r) == 3 and int(r[1]) == pid and "ffmpeg" in r[2]]


def stitch_with_file_limit(
    root: Path, tmp: Path, output: str, per_chapter: int, unit_s: float = 600, limit: int = 400_000
) -> subprocess.CompletedProcess:
    """The stitch with RLIMIT_FSIZE at `limit` bytes (EFBIG: a stand-in for a full disk)."""
    return subprocess.run(
        _args(root, tmp, output, per_chapter, unit_s, "plain"),
        capture_output=True,
        text=True,
        preexec_fn=file_size_limit(limit),
        timeout=120,
    )


def kill_while_encoding(root: Path, tmp: Path, output: str, per_chapter: int = 4) -> None:
    """SIGKILL the stitching process once its first segment is in an ffmpeg; return when that
    ffmpeg has read the end of its input and exited."""
    proc = subprocess.Popen(_args(root, tmp, output, per_chapter, 600, "stuck"), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ENCODING"
        kids = ffmpeg_children(proc.pid)
        assert kids
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        wait_until(lambda: all(exited(k) for k in kids), 30, "ffmpeg exits")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
