"""An EPUB's chapters, title, author and cover reach the m4b (a fake-engine worker)."""

from __future__ import annotations

import subprocess

from helpers.books import COVER, make_epub3
from helpers.fake import fake_env
from helpers.ops import submit
from helpers.procs import narrate, wait_for_job


def test_epub_chapters_reach_the_m4b(env, home, voice_wav):
    """Submit an EPUB, run the fake-engine worker, read the m4b's chapter titles and title back."""
    import imageio_ffmpeg

    e = fake_env(env, home)
    book = make_epub3(home / "keeper.epub")
    out = home / "out" / "keeper.m4b"
    job_id = submit(e, book, voice_wav, out)
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(job_id)
    assert st["status"] == "finished", st
    meta = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(out), "-f", "ffmetadata", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    titles = [line.split("=", 1)[1] for line in meta.splitlines() if line.startswith("title=")]
    assert titles == ["The Lighthouse Keeper", "Arrival", "The Storm", "Dawn"]  # the book's, then its chapters
    # The book's own author and cover are embedded (mutagen reads the MP4 atoms back).
    from mutagen.mp4 import MP4

    tags = MP4(str(out)).tags
    assert tags["\xa9ART"] == ["Ada Lovelace"] and bytes(tags["covr"][0]) == COVER
