"""Chapters from the document reach the audiobook file."""

from __future__ import annotations

import subprocess

import pytest
from helpers.fake import fake_env
from helpers.ops import submit
from helpers.procs import narrate, wait_for_job


@pytest.mark.parametrize("ext", ["m4b", "mp3"])
def test_chapters_from_headings_reach_the_audiobook(env, home, voice_wav, ext):
    """Markdown headings and "Chapter ..." lines become chapters of the output file, at the
    sample where their first sentence starts."""
    import imageio_ffmpeg

    e = fake_env(env, home)
    text = (
        "Opening words come first.\n\n# The Storm\n\nRain fell. Wind rose.\n\nChapter 2\n\nMorning came. It was calm."
    )
    doc = home / "chap.md"
    doc.write_text(text)
    out = home / "out" / f"chap.{ext}"
    job_id = submit(e, doc, voice_wav, out)
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(job_id)
    chapters = st["result"]["chapters"]
    assert [c["title"] for c in chapters] == ["chap", "The Storm", "Chapter 2"]  # the opening: the book's name
    frames = st["result"]["frames"]  # sentences: opening | heading, 2 | heading, 2
    storm = (frames[0] * 1920 + 2000 * 24) / 24000  # the chapter pause (NARRATE_CHAPTER_PAUSE_MS)
    assert chapters[0]["start_seconds"] == 0 and chapters[1]["start_seconds"] == pytest.approx(storm)
    meta = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(out), "-f", "ffmetadata", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    titles = [line.split("=", 1)[1] for line in meta.splitlines() if line.startswith("title=")]
    starts = [int(line.split("=")[1]) for line in meta.splitlines() if line.startswith("START=")]
    assert titles[-3:] == ["chap", "The Storm", "Chapter 2"]
    timebase = [line for line in meta.splitlines() if line.startswith("TIMEBASE=")][0].split("/")[1]
    got = [s / int(timebase) for s in starts]  # AAC priming may shift the container's times by ~43 ms
    assert got == pytest.approx([c["start_seconds"] for c in chapters], abs=0.1)
