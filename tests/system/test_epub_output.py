"""`--format epub` (a fake-engine worker): the book is delivered as its read-along EPUB, the audio (AAC) inside it
and nowhere beside it. An EPUB read with `--format epub` becomes itself with media overlays (EPUBCheck clean, every
sentence's clip within a frame of the timing manifest's, word by word with `--word-timings`), the job's output and
its sha256 are the EPUB's, its subtitles lie beside it, a library export holds it as the book's file; what cannot
go with it (chapter files, parts, manifests of an audio file beside it, a podcast feed) is refused before anything
is enqueued, in one line naming the option."""

from __future__ import annotations

import hashlib
import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from helpers.fake import fake_env
from helpers.ops import one_error_line, submit, submit_json
from helpers.procs import narrate, wait_for_job
from helpers.readalong import (
    EPUBCHECK_MISSING,
    clock,
    epubcheck,
    epubcheck_command,
    make_readalong_epub,
    overlays,
    word_sequences,
)

FRAME_S = 0.080


@pytest.mark.skipif(epubcheck_command() is None, reason=EPUBCHECK_MISSING)
def test_an_epub_output_is_the_read_along_epub_with_the_audio_inside(env, home, voice_wav):
    import imageio_ffmpeg

    e = fake_env(env, home)
    source = make_readalong_epub(home / "keeper.epub")
    out = home / "out" / "keeper.epub"
    job_id = submit(e, source, voice_wav, out, "--subtitles", "json", "--word-timings")
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(job_id)
    assert st["status"] == "finished", st
    result = st["result"]
    assert result["output"] == str(out) and result["output_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert sorted(p.name for p in out.parent.iterdir()) == ["keeper.epub", "keeper.json", "keeper.words.vtt"]
    errors, _, report = epubcheck(out)
    assert errors == 0, report
    timing = json.loads((home / "out" / "keeper.json").read_text())
    clips = overlays(out)
    for s in timing["sentences"]:  # word by word: the first word's clip starts with its sentence
        begin = clips.get(f"nr-s{s['index']}", clips.get(f"nr-s{s['index']}-w1"))
        assert begin is not None and abs(begin[0] - s["start"]) <= FRAME_S, s
    assert len(word_sequences(out)) == len(timing["sentences"]) == result["word_timings"]["sentences"]
    with zipfile.ZipFile(out) as z:
        [audio] = [n for n in z.namelist() if n.startswith("EPUB/narrate/audio")]
        (home / "inside.m4a").write_bytes(z.read(audio))
        assert b'id="nr-s' in z.read("EPUB/ch1.xhtml")  # the EPUB's own pages, marked
    probe = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-i", str(home / "inside.m4a"), "-f", "null", "-"],
        capture_output=True,
        text=True,
    )
    assert (
        "aac" in probe.stderr and abs(clock(probe.stderr.rsplit("time=", 1)[1].split()[0]) - timing["duration"]) < 0.1
    )

    library = home / "library"
    library.mkdir()
    ran = narrate(e, "export", job_id, "--library", str(library), "--layout", "flat", "--json")
    assert ran.returncode == 0, ran.stderr
    folder = Path(json.loads(ran.stdout)["folder"])
    assert (folder / "The Lighthouse Keeper.epub").read_bytes() == out.read_bytes()
    assert (folder / "The Lighthouse Keeper.words.vtt").exists() and (folder / "metadata.json").exists()


def test_what_cannot_go_with_an_epub_output_is_refused(env, home, voice_wav):
    e = fake_env(env, home)
    doc = home / "notes.md"
    doc.write_text("# One\n\nA line.\n")
    for extra, said in (
        (("-o", "notes.epub", "--split", "chapters"), "--split"),
        (("--format", "epub", "--max-part-hours", "2"), "--max-part-hours"),
        (("--format", "epub", "--readalong", "manifest"), "--readalong manifest"),
        (("-o", "notes.epub", "--feed", "news"), "a podcast feed's episodes are audio files"),
    ):
        proc = narrate(e, "submit", str(doc), "--voice", str(voice_wav), *extra)
        line = one_error_line(proc)
        assert "an EPUB output (--format epub)" in line and said in line, line
    assert narrate(e, "list", "--json").stdout.strip() in ("", "[]")  # nothing enqueued
    [job] = submit_json(e, [doc], voice_wav, "--format", "epub")
    assert job["output"] == str(home / "out" / "notes.epub")
