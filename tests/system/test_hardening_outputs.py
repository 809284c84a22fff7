"""What lands in the output a user trusts: m4b chapters Apple's players read on books longer than
a minute and a half, subtitles with the text as written, the audio figure of a job served from the
cache, split outputs placed all or none, and `narrate run` saying what to do while a worker holds
the host lock."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from helpers.fake import fake_env
from helpers.procs import NARRATE, narrate, wait_for_job, wait_until
from narrate.jobs.ffmpeg import ffmpeg_exe


def _probe(path) -> str:
    return subprocess.run([ffmpeg_exe(None), "-hide_banner", "-i", str(path)], capture_output=True, text=True).stderr


def test_a_long_segmented_m4b_has_the_quicktime_chapter_track(tmp_path):
    """Muxed straight from the ADTS segments, a book of more than ~90 s got a reference to a QuickTime
    chapter track that was never written ("Referenced QT chapter track not found") and only Nero's
    list: Apple Books, BookPlayer and every AVFoundation player showed no chapters."""
    from mutagen.mp4 import MP4
    from narrate.jobs.book.spec import JobSpec

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import stitch_bench

    plan, store = stitch_bench.make_book(tmp_path / "b", 4 / 60, per_chapter=12)  # 4 minutes
    spec = JobSpec(document="d", voice="a" * 64, output="book.m4b", loudness=None)
    out = tmp_path / "out" / "book.m4b"
    stitch_bench.segmented(plan, store, spec, out, tmp_path / "s", None, unit_s=30)
    probe = _probe(out)
    assert "Referenced QT chapter track not found" not in probe, probe
    assert "Data: bin_data (text" in probe, probe  # the QuickTime chapter (text) track
    chapters = MP4(out).chapters
    assert chapters is not None and [c.title for c in chapters] == list(plan.chapter_at.values())


def test_subtitles_and_the_manifest_carry_the_text_as_written(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=0)
    doc = home / "money.txt"
    doc.write_text("Dr. Smith paid $3.50 for 2 apples. Nginx served it.")
    lexicon = home / "lexicon.txt"
    lexicon.write_text("Nginx = engine x\n")
    proc = narrate(
        e,
        "submit",
        str(doc),
        "--voice",
        str(voice_wav),
        "-o",
        str(home / "out" / "money.wav"),
        "--subtitles",
        "srt,vtt,json",
        "--lexicon",
        str(lexicon),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    job_id = json.loads(proc.stdout)["id"]
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(job_id)["status"] == "finished"
    srt = (home / "out" / "money.srt").read_text()
    assert "Dr. Smith paid $3.50 for 2 apples." in srt and "Nginx served it." in srt, srt
    assert "three dollars" not in srt and "engine x" not in srt
    manifest = json.loads((home / "out" / "money.json").read_text())
    assert [s["text"] for s in manifest["sentences"]] == ["Dr. Smith paid $3.50 for 2 apples.", "Nginx served it."]


def test_a_job_served_from_the_cache_reports_its_audio(env, home, voice_wav, external_redis):
    e = fake_env(env, home, delay_ms=0)
    doc = home / "cached.txt"
    doc.write_text("One sentence here. Another sentence there. And a third one.")
    first = narrate(e, "submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "a.wav"), "--json")
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    a = wait_for_job(json.loads(first.stdout)["id"])
    second = narrate(e, "submit", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "b.wav"), "--json")
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    b = wait_for_job(json.loads(second.stdout)["id"])
    assert b["status"] == "finished" and b["result"]["synthesized"] == 0, b["result"]  # every sentence cached
    assert a["progress"]["audio_seconds"] > 0.3
    assert abs(b["progress"]["audio_seconds"] - a["progress"]["audio_seconds"]) < 0.01, (a["progress"], b["progress"])


def test_split_outputs_are_placed_all_or_none(env, home, voice_wav, external_redis, tmp_path):
    """The chapter folder turned into a link to elsewhere before the files were placed: the job said
    "nothing was written", yet book.mp3 was in place. Every file is now copied before any is renamed."""
    e = fake_env(env, home, delay_ms=0)
    doc = home / "book.md"
    doc.write_text("# One\n\nThe first chapter.\n\n# Two\n\nThe second chapter.\n")
    proc = narrate(
        e,
        "submit",
        str(doc),
        "--voice",
        str(voice_wav),
        "-o",
        str(home / "out" / "book.mp3"),
        "--split",
        "chapters+book",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, home / "out" / "book")  # where the chapter files go: a link now
    narrate(e, "worker", "--burst", "--quiet")
    st = wait_for_job(json.loads(proc.stdout)["id"])
    assert st["status"] == "failed" and "nothing was written" in st["error"], st
    assert not (home / "out" / "book.mp3").exists()
    assert list(elsewhere.iterdir()) == []
    assert [p.name for p in (home / "out").iterdir()] == ["book"]  # no temp file left beside it


def test_narrate_run_says_what_to_do_while_a_worker_holds_the_host_lock(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=0)
    doc = home / "short.txt"
    doc.write_text("A short document.")
    lock = open(home / "host.lock", "a+")  # the path NARRATE_LOCK_PATH names
    fcntl.flock(lock, fcntl.LOCK_EX)
    proc = subprocess.Popen(
        [*NARRATE, "run", str(doc), "--voice", str(voice_wav), "-o", str(home / "short.wav")],
        env=e,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said: list[str] = []

        def waiting() -> bool:
            line = proc.stderr.readline()
            said.append(line)
            return "waiting for the host lock" in line

        wait_until(waiting, 120, "the waiting message")
        assert "narrate submit DOCUMENT --voice VOICE -o OUTPUT --wait" in said[-1], said
        time.sleep(0.2)
        assert proc.poll() is None  # still waiting, not failed
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert (home / "short.wav").exists()
