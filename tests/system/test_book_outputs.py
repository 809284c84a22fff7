"""What a finished book is made of besides its audio: subtitles and the timing manifest, loudness,
pauses and fades at joins, tags and cover art, one file per chapter and parts (fake engine,
real worker processes, outputs decoded with ffmpeg and read back with mutagen and pyloudnorm)."""

from __future__ import annotations

import json
import re

import numpy as np
import pyloudnorm
import pytest
from helpers.audio import SR, decoded_samples
from helpers.fake import fake_env
from helpers.ops import submit
from helpers.procs import narrate, wait_for_job

FRAME = 1920  # samples per codec frame (AAC 1024 at 48 kHz; the engine's 80 ms frame is the looser one)


TEXT = (
    "Opening words come first. They set the scene.\n\n# The Storm\n\nRain fell hard on the roof. Wind rose.\n\n"
    "The night went on and on.\n\nChapter 2\n\nMorning came at last. It was calm and bright."
)


SENTENCES = 9


def _run(e, home, voice_wav, out, *extra) -> dict:
    doc = home / f"{out.stem}.md"
    doc.write_text(TEXT)
    job_id = submit(e, doc, voice_wav, out, *extra)
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(job_id)
    assert st["status"] == "finished", st
    return st


def test_subtitles_and_manifest_are_timed_to_the_audio(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=0)
    out = home / "out" / "book.m4b"
    _run(e, home, voice_wav, out, "--subtitles", "srt,vtt,json")
    audio = decoded_samples(out)
    srt = (home / "out" / "book.srt").read_text()
    vtt = (home / "out" / "book.vtt").read_text()
    manifest = json.loads((home / "out" / "book.json").read_text())
    arrows = re.findall(r"(\d\d):(\d\d):(\d\d)[,.](\d{3}) --> (\d\d):(\d\d):(\d\d)[,.](\d{3})", srt)
    assert len(arrows) == SENTENCES and vtt.startswith("WEBVTT") and vtt.count("-->") == SENTENCES
    h, m, s, ms = map(int, arrows[-1][4:])
    assert abs((h * 3600 + m * 60 + s) * SR + ms * SR // 1000 - audio.size) <= FRAME
    sentences = manifest["sentences"]
    assert len(sentences) == SENTENCES and manifest["audio"] == "book.m4b"
    assert abs(sentences[-1]["end"] * SR - audio.size) <= FRAME
    assert [x["chapter"] for x in sentences] == [0, 0, 1, 1, 1, 1, 2, 2, 2]
    assert [c["title"] for c in manifest["chapters"]] == ["book", "The Storm", "Chapter 2"]
    assert sentences[2]["text"] == "The Storm" and sentences[0]["start"] == 0
    gap = (sentences[2]["start"] - sentences[1]["end"]) * 1000
    assert gap == pytest.approx(2000, abs=1)  # the chapter pause


def test_loudness_reaches_the_target_under_the_peak_ceiling(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=0)
    meter = pyloudnorm.Meter(SR)
    for target in ("-19", "-16"):
        out = home / "out" / f"loud{target}.m4b"
        _run(e, home, voice_wav, out, "--loudness", target)
        x = decoded_samples(out).astype(np.float64) / 32768
        assert meter.integrated_loudness(x) == pytest.approx(float(target), abs=1.0)
        assert 20 * np.log10(np.abs(x).max()) < -3.0


def test_loudness_off_keeps_the_samples_and_joins_have_no_clicks(env, home, voice_wav):
    """Loudness off: every sample outside the 5 ms edge fades is the checkpoint's own. No join
    has a step larger than the largest step inside the sentences (the fake engine's tones stop
    mid-wave: without the fades each sentence's end is a click)."""
    from narrate.jobs.documents.normalize import normalize
    from narrate.worker.testkit.fake_engine import tone

    e = fake_env(env, home, delay_ms=0)
    out = home / "out" / "plain.wav"
    _run(e, home, voice_wav, out, "--loudness", "off", "--subtitles", "json", "--sentence-pause", "100")
    audio = decoded_samples(out).astype(np.int32)
    fade = 120
    inner_step = 0
    for s in json.loads((home / "out" / "plain.json").read_text())["sentences"]:
        a, b = round(s["start"] * SR), round(s["end"] * SR)
        spoken = normalize(s["text"])  # the manifest has the text as written; the tone is of what is spoken
        want = np.round(np.clip(tone(spoken, 2048)[0], -1, 1) * 32767).astype(np.int32)
        assert b - a == want.size
        assert np.array_equal(audio[a + fade : b - fade], want[fade:-fade])
        inner_step = max(inner_step, int(np.abs(np.diff(want)).max()))
    assert int(np.abs(np.diff(audio)).max()) <= inner_step


def test_tags_and_cover_are_embedded(env, home, voice_wav):
    import subprocess

    import imageio_ffmpeg
    from mutagen.id3 import ID3
    from mutagen.mp4 import MP4

    cover = home / "cover.png"
    cover.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    e = fake_env(env, home, delay_ms=0)
    tags = ("--narrator", "Ann Reader", "--author", "Jo Writer", "--year", "1999", "--cover", str(cover))
    m4b = home / "out" / "tagged.m4b"
    _run(e, home, voice_wav, m4b, *tags)
    t = MP4(m4b).tags
    assert t["\xa9nam"] == ["tagged"] and t["\xa9ART"] == ["Jo Writer"] and t["\xa9wrt"] == ["Ann Reader"]
    assert t["\xa9day"] == ["1999"] and bytes(t["covr"][0]) == cover.read_bytes()
    meta = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(m4b), "-f", "ffmetadata", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert meta.count("[CHAPTER]") == 3  # the chapters survive the tagging
    mp3 = home / "out" / "tagged.mp3"
    _run(e, home, voice_wav, mp3, *tags)
    id3 = ID3(mp3)
    assert str(id3["TIT2"]) == "tagged" and str(id3["TPE1"]) == "Jo Writer" and str(id3["TCOM"]) == "Ann Reader"
    assert id3.getall("APIC")[0].data == cover.read_bytes()


def test_split_into_chapter_files_and_parts(env, home, voice_wav):
    from mutagen.mp3 import MP3

    e = fake_env(env, home, delay_ms=0)
    out = home / "out" / "split.mp3"
    st = _run(e, home, voice_wav, out, "--split", "chapters")
    folder = home / "out" / "split"
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["split - 01 - split.mp3", "split - 02 - The Storm.mp3", "split - 03 - Chapter 2.mp3"]
    assert not out.exists()
    total = sum(MP3(folder / n).info.length for n in names)
    assert total == pytest.approx(st["result"]["duration_seconds"], abs=0.2)
    both = home / "out" / "both.m4b"
    _run(e, home, voice_wav, both, "--split", "chapters+book", "--max-part-hours", str(4.0 / 3600))
    beside = sorted(p.name for p in (home / "out").iterdir() if p.name.startswith("both"))
    assert "both" in beside and any(n.startswith("both - part 1 of ") for n in beside) and "both.m4b" not in beside
    assert len(list((home / "out" / "both").iterdir())) == 3


def test_chapter_files_of_some_chapters_keep_the_books_numbers(env, home, voice_wav):
    """`--chapters 1,3 --split chapters`: the files are chapters 01 and 03 of the book, not 01 and 02."""
    e = fake_env(env, home, delay_ms=0)
    out = home / "out" / "some.mp3"
    st = _run(e, home, voice_wav, out, "--split", "chapters", "--chapters", "1,3")
    names = sorted(p.name for p in (home / "out" / "some").iterdir())
    assert names == ["some - 01 - some.mp3", "some - 03 - Chapter 2.mp3"], names
    assert [c["title"] for c in st["result"]["chapters"]] == ["some", "Chapter 2"]
