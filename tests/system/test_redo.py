"""`narrate redo` with the fake engine in real worker processes: one sentence rendered again (only it is
synthesized again; the fake engine's log says what it synthesized), the book stitched again from the sentence
cache and the segments the first stitch kept, its files replaced in one rename each (a reader of the output never
sees anything but the old file whole or the new one whole), subtitles and chapters with the new timing, the feed's
episode and the library's folder the new job's, the old job marked superseded; a take accepted by ear is not
flagged again by the proof pass; bad input is one error line and enqueues nothing."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import threading
from pathlib import Path

from helpers.books import book
from helpers.fake import fake_env, synthesized
from helpers.ops import narrate_keys, one_error_line, submit
from helpers.procs import narrate, wait_for_job
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings

TEXT = book(20).split("\n\n")
CHAPTERED = "# One\n\n" + "\n\n".join(TEXT[:2]) + "\n\n# Two\n\n" + "\n\n".join(TEXT[2:])  # 22 sentences


def _worker(e: dict) -> str:
    proc = narrate(e, "worker", "--burst")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def _redo(e: dict, *args: str) -> dict:
    proc = narrate(e, "redo", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Watcher(threading.Thread):
    """Reads the file over and over while a job runs: the hash of every whole read."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path, self.seen, self.stop = path, set(), threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            with open(self.path, "rb") as f:  # the name always opens a whole file: the old or the new
                self.seen.add(hashlib.sha256(f.read()).hexdigest())
            self.stop.wait(0.002)  # a read every few milliseconds, not a core spent spinning beside the worker


def _chapter_starts(path: Path) -> list[float]:
    meta = subprocess.run(
        [ffmpeg_exe(), "-v", "error", "-i", str(path), "-f", "ffmetadata", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [int(s) * int(n) / int(d) for n, d, s in re.findall(r"^TIMEBASE=(\d+)/(\d+)\s+START=(\d+)$", meta, re.M)]


def test_a_redo_renders_one_sentence_again_and_takes_the_old_jobs_place(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=5, NARRATE_FAKE_SEEDED="1", NARRATE_MAX_FRAMES="40")  # a tone as long as its text
    library = home / "library"
    library.mkdir()
    doc = home / "book.md"
    doc.write_text(CHAPTERED)
    out = home / "out" / "book.m4b"
    old = submit(e, doc, voice_wav, out, "--subtitles", "srt,json", "--feed", "news", "--library", str(library))
    _worker(e)
    assert wait_for_job(old)["status"] == "finished"
    first, before = len(synthesized(home)), _sha(out)
    manifest = json.loads(out.with_suffix(".json").read_text())
    assert first == len(manifest["sentences"]) == 22

    done = _redo(e, old, "3", "--seed", "9")
    assert done["redo_of"] == old and done["sentences"] == [3]
    watcher = Watcher(out)
    watcher.start()
    log = _worker(e)
    watcher.stop.set()
    watcher.join()
    new = done["id"]
    st = wait_for_job(new)
    assert st["status"] == "finished", st
    assert [i for i, _ in synthesized(home)[first:]] == [2]  # sentence 3 (index 2), nothing else
    assert st["result"]["synthesized"] == 1 and st["result"]["reused"] == 21
    after = _sha(out)
    assert after != before and watcher.seen <= {before, after} and before in watcher.seen
    assert "stitched following the book it redoes: 1 of 2 segments kept" in log, log[-3000:]

    # the old job says by which it was superseded; the feed and the library are the new job's
    shown = narrate(e, "status", old)
    assert f"superseded by: {new}" in shown.stdout, shown.stdout
    feed = json.loads(narrate(e, "feed", "show", "news", "--json").stdout)
    assert [n["id"] for n in feed["items"]] == [new], feed
    [folder] = [p.parent for p in library.rglob("metadata.json")]  # replaced, not a second edition beside it
    assert json.loads((folder / "metadata.json").read_text())["narrate"]["job"] == new
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]
    assert narrate(e, "redo", old, "4").returncode == 1  # the old job is not redone again: the new one is

    # a corrected text: another length, so the sentences after it, the captions and chapter Two move
    text = "Sentence number four is now a good deal longer than it was before, and it says so at length."
    longer = _redo(e, new, "5", "--text", text)
    _worker(e)
    assert wait_for_job(longer["id"])["status"] == "finished"
    assert [i for i, _ in synthesized(home)[first + 1 :]] == [4]
    moved = json.loads(out.with_suffix(".json").read_text())
    was, now = manifest["sentences"], moved["sentences"]
    assert now[4]["text"] == text and now[4]["end"] - now[4]["start"] > was[4]["end"] - was[4]["start"]
    grew = (now[4]["end"] - now[4]["start"]) - (was[4]["end"] - was[4]["start"])
    starts = [b["start"] - a["start"] for a, b in zip(was, now, strict=True)]
    two = next(i for i, c in enumerate(now) if c["chapter"] == 1)  # chapter Two's first sentence: a cut before it
    assert all(abs(d) < 1e-9 for d in starts[:5]) and all(abs(d - grew) < 1e-6 for d in starts[5:two])
    shift = starts[two]
    assert 0 <= shift - grew < 1024 / 24000 + 1e-6  # at most an AAC frame of pause more at the cut
    assert all(abs(d - shift) < 1e-6 for d in starts[two:])
    chapter = next(c for c in moved["chapters"] if c["title"] == "Two")
    assert abs(chapter["start"] - next(c for c in manifest["chapters"] if c["title"] == "Two")["start"] - shift) < 1e-6
    assert abs(_chapter_starts(out)[-1] - chapter["start"]) < 0.002
    assert text in out.with_suffix(".srt").read_text()
    feed = json.loads(narrate(e, "feed", "show", "news", "--json").stdout)
    assert [n["id"] for n in feed["items"]] == [longer["id"]]


def test_an_accepted_take_is_not_flagged_again(env, home, voice_wav):
    e = fake_env(
        env,
        home,
        delay_ms=5,
        NARRATE_FAKE_SEEDED="1",
        NARRATE_PROOF_RATE_FACTOR="1000",
        NARRATE_FAKE_PROOF_FLAW="number two =drop",
        NARRATE_FAKE_PROOF_LOG=str(home / "heard.log"),
    )
    doc = home / "book.txt"
    doc.write_text(book(6))
    old = submit(e, doc, voice_wav, home / "out" / "book.wav", "--proof", "--retakes", "0")
    _worker(e)
    proof = wait_for_job(old)["result"]["proof"]
    assert proof["still_flagged"] == 1 and [s["index"] for s in proof["sentences"]] == [2]
    # --flagged picks it (and would render it again with the next seed)
    flagged = _redo(e, old, "--flagged")
    assert flagged["sentences"] == [3]
    narrate(e, "cancel", flagged["id"])
    heard = len((home / "heard.log").read_text().splitlines())
    accepted = _redo(e, old, "--accept", "3")
    assert accepted["accepted"] == [3] and accepted["sentences"] == []
    n = len(synthesized(home))
    _worker(e)
    st = wait_for_job(accepted["id"])
    assert st["status"] == "finished" and len(synthesized(home)) == n  # nothing synthesized, nothing heard
    assert len((home / "heard.log").read_text().splitlines()) == heard
    assert st["result"]["proof"]["still_flagged"] == 0 and st["result"]["proof"]["sentences"] == []
    assert "no sentence left flagged" in one_error_line(narrate(e, "redo", accepted["id"], "--flagged"))


def test_a_bad_redo_is_one_line_and_enqueues_nothing(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=5)
    doc = home / "book.txt"
    doc.write_text(book(6))
    done = submit(e, doc, voice_wav, home / "out" / "book.wav")
    _worker(e)
    assert wait_for_job(done)["status"] == "finished"
    waiting = submit(e, home / "book.txt", voice_wav, home / "out" / "other.wav", "--seed", "5")
    with Connection(Settings.from_env()) as conn:
        keys = narrate_keys(conn.redis)
        for args, said in [
            (("narrate-nope", "1"), "no job 'narrate-nope'"),
            ((done, "7"), "sentence 7 is not in job"),
            ((done, "0"), "sentence 0 is not in job"),
            ((done, "x"), "is not a number"),
            ((done, "2", "3", "--text", "Two at once."), "--text corrects one sentence; 2 sentences named"),
            ((done, "2", "--text", "   "), "--text is empty"),
            ((done,), "name the sentences to render again"),
            ((done, "--flagged"), "was not proofed"),
            ((done, "2", "--accept", "2"), "cannot be rendered again and accepted at once"),
            ((waiting, "1"), f"cannot redo job {waiting}: it is queued and has not started yet"),
        ]:
            line = one_error_line(narrate(e, "redo", *args))
            assert said in line, (args, line)
        assert narrate_keys(conn.redis) == keys  # nothing enqueued, claimed or stored
