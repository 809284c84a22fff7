"""Ogg (Opus) and FLAC books, and mp3 books split or in parts, encoded while they are synthesized
(jobs/audio/stream_encode.py): one ffmpeg per output file fed in reading order gives the same audio as one
encode of the whole WAV after the last sentence, with chapter marks written afterwards (jobs/audio/tagging.py);
a stop, a kill or a full disk leaves no child and no file. (An mp3 book in one file is encoded in segments:
tests/system/test_segmented_mp3.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers.audio import SR, decoded_samples
from helpers.encode import ffmpeg_children, kill_while_encoding, stitch_with_file_limit
from helpers.fake import fake_env
from helpers.ops import submit
from helpers.procs import narrate, wait_for_job, wait_until
from narrate.jobs.audio import segment_encoder
from narrate.jobs.audio.segments import AAC_FRAME
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.ffmpeg import ffmpeg_exe

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # the benchmarks' helpers
import stitch_bench  # noqa: E402


@pytest.fixture(scope="module")
def minute(tmp_path_factory):
    """A minute of speech-like sentences, a chapter every 4 sentences."""
    root = tmp_path_factory.mktemp("minute")
    plan, store = stitch_bench.make_book(root, 1 / 60, per_chapter=4)
    return root, plan, store


def _chapters(path) -> list[tuple[int, str]]:
    """(start ms, title) of every chapter, as ffmpeg reads the file."""
    meta = subprocess.run(
        [ffmpeg_exe(), "-v", "error", "-i", str(path), "-f", "ffmetadata", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = re.findall(r"^TIMEBASE=(\d+)/(\d+)\s+START=(\d+)\s+END=\d+\s+title=(.*)$", meta, re.M)
    return [(round(int(start) * int(num) * 1000 / int(den)), title) for num, den, start, title in found]


@pytest.mark.parametrize("ext", ["mp3", "opus", "flac"])
def test_a_streamed_book_is_the_one_encode_of_its_samples_with_every_chapter(minute, tmp_path, ext):
    root, plan, store = minute
    split = "chapters+book" if ext == "mp3" else ""  # an mp3 is streamed split (in one file: in segments)
    spec = JobSpec(document="d", voice="a" * 64, output=f"book.{ext}", loudness=None, split=split)
    # units at chapters and after 10 s: the book reaches its ffmpeg in several pieces
    got = stitch_bench.segmented(plan, store, spec, tmp_path / "out" / f"book.{ext}", tmp_path / "s", None, unit_s=10)
    assert len(got["units"]) > len(plan.chapter_at) >= 3
    assert [n for n in (tmp_path / "s").iterdir()] == []  # the scratch directory went with the writer
    stitch_bench.old(plan, store, spec, tmp_path / "out" / f"once.{ext}", tmp_path / "s")
    stitch_bench.old(plan, store, spec, tmp_path / "out" / "exact.wav", tmp_path / "s")
    streamed = decoded_samples(tmp_path / "out" / f"book.{ext}")
    once = decoded_samples(tmp_path / "out" / f"once.{ext}")
    assert streamed.size > 0 and np.array_equal(streamed, once)  # the same samples into the same encoder
    if ext == "flac":
        assert np.array_equal(streamed, decoded_samples(tmp_path / "out" / "exact.wav"))
    starts = [round(a * 1000 / SR) for a, _ in got["chapters"]]
    titles = [t for _, t in got["chapters"]]
    marks = _chapters(tmp_path / "out" / f"book.{ext}")
    assert [t for _, t in marks] == titles == [t for _, t in _chapters(tmp_path / "out" / f"once.{ext}")]
    if ext == "mp3":  # ffmpeg shifts ID3 chapter times back by the encoder delay it skips: read the frames
        from mutagen.id3 import ID3

        tag = ID3(tmp_path / "out" / "book.mp3")
        marks = [(f.start_time, f.sub_frames["TIT2"].text[0]) for f in tag.getall("CHAP")]
        assert [f.child_element_ids for f in tag.getall("CTOC")] == [[f"ch{n}" for n in range(len(titles))]]
    assert [a for a, _ in sorted(marks)] == pytest.approx(starts, abs=1)


@pytest.mark.parametrize("split", ["chapters", "chapters+book"])
def test_chapter_files_are_streamed_one_ffmpeg_each_and_add_up_to_the_book(minute, tmp_path, split):
    root, plan, store = minute
    spec = JobSpec(document="d", voice="a" * 64, output="book.flac", loudness=None, split=split)
    got = stitch_bench.segmented(plan, store, spec, tmp_path / "out" / "book.flac", tmp_path / "s", None)
    whole = JobSpec(document="d", voice="a" * 64, output="exact.wav", loudness=None)
    stitch_bench.old(plan, store, whole, tmp_path / "out" / "exact.wav", tmp_path / "s")
    exact = decoded_samples(tmp_path / "out" / "exact.wav")
    files = sorted((tmp_path / "out" / "book").glob("*.flac"))
    assert len(files) == len(plan.chapter_at) == len(got["chapters"])
    assert np.array_equal(np.concatenate([decoded_samples(f) for f in files]), exact)
    assert (tmp_path / "out" / "book.flac").exists() == (split == "chapters+book")
    if split == "chapters+book":
        assert np.array_equal(decoded_samples(tmp_path / "out" / "book.flac"), exact)


@pytest.mark.parametrize("split", ["", "chapters+book"])
def test_parts_are_streamed_a_chapter_at_a_time_and_add_up_to_the_book(minute, tmp_path, split):
    """`--max-part-hours`: a chapter joins the open part or starts the next one once its end is
    known; the parts hold every sample once, in order, with their chapter marks."""
    root, plan, store = minute
    spec = JobSpec(
        document="d", voice="a" * 64, output="book.flac", loudness=None, split=split, max_part_hours=25 / 3600
    )
    got = stitch_bench.segmented(plan, store, spec, tmp_path / "out" / "book.flac", tmp_path / "s", None)
    whole = JobSpec(document="d", voice="a" * 64, output="exact.wav", loudness=None)
    stitch_bench.old(plan, store, whole, tmp_path / "out" / "exact.wav", tmp_path / "s")
    exact = decoded_samples(tmp_path / "out" / "exact.wav")
    parts = sorted((tmp_path / "out").glob("book - part *.flac"))
    assert len(parts) >= 2 and not (tmp_path / "out" / "book.flac").exists()
    decoded = [decoded_samples(p) for p in parts]
    assert np.array_equal(np.concatenate(decoded), exact)
    assert all(d.size <= 25 * SR for d in decoded)  # no part over the limit (no chapter is longer)
    starts = np.cumsum([0] + [d.size for d in decoded[:-1]])
    for part, first, d in zip(parts, starts, decoded, strict=True):  # each part's marks: its chapters
        inside = [round((a - first) * 1000 / SR) for a, _ in got["chapters"] if first <= a < first + d.size]
        assert len(inside) >= 1 and [ms for ms, _ in _chapters(part)] == pytest.approx(inside, abs=1)
    if split:
        files = sorted((tmp_path / "out" / "book").glob("*.flac"))
        assert np.array_equal(np.concatenate([decoded_samples(f) for f in files]), exact)


@pytest.mark.parametrize("ext", ["m4b", "mp3"])
def test_a_book_is_encoded_while_later_sentences_are_synthesized(env, home, voice_wav, ext):
    """The fake engine held after its first batch (chapter one and half of two) until chapter one's segment is
    encoded (m4b: as AAC; mp3: as MP3 frames): the job records it as done while synthesis was still running. Held,
    not slowed: on a busy machine a slow engine could still finish before the encoder (the test then failed)."""
    from helpers.procs import start_worker, stop_worker

    hold = home / "hold"
    hold.touch()
    e = fake_env(env, home, delay_ms=50, NARRATE_BATCH_SIZE="6", NARRATE_FAKE_HOLD_FILE=str(hold))
    doc = home / "ch.md"
    doc.write_text("\n\n".join(f"# Part {c}\n\nA first line here. A second line here. A third one." for c in range(3)))
    out = home / "out" / f"ch.{ext}"
    job_id = submit(e, doc, voice_wav, out)
    worker = start_worker(e)
    try:
        suffix = "aac" if ext == "m4b" else "mp3"
        wait_until(lambda: any((home / "stitch").glob(f"narrate-stitch-*/seg-00000.{suffix}")), 120, "chapter one")
        time.sleep(0.5)  # the segment is counted as it is named
        hold.unlink()
        st = wait_for_job(job_id, timeout=120)
    finally:
        stop_worker(worker)
    assert st["status"] == "finished", st.get("error")
    r = st["result"]
    assert r["segments"] == 3 and r["segments_encoded_early"] >= 1, r
    assert r["timings"]["stitch_tail_s"] > 0
    assert [t for _, t in _chapters(out)] == ["Part 0", "Part 1", "Part 2"]
    if ext == "mp3":  # the LAME tag's delay and padding: the exact length
        assert decoded_samples(out).size == r["samples"]
    else:  # the edit list skips the encoder delay; under one AAC frame of padding stays
        assert abs(decoded_samples(out).size - r["samples"]) < AAC_FRAME


def test_cancel_while_an_opus_book_is_streamed_leaves_no_ffmpeg_and_no_file(env, home, voice_wav, external_redis):
    from helpers.ops import submit_json
    from helpers.procs import child_pid, start_worker, stop_worker

    e = fake_env(env, home, delay_ms=60)
    doc = home / "many.md"
    doc.write_text("\n\n".join(f"# Part {c}\n\nLine {c} one is here. Line {c} two is here." for c in range(40)))
    [job] = submit_json(e, [doc], voice_wav, "-o", str(home / "out" / "many.opus"))
    worker = start_worker(e)
    try:
        scratch = home / "stitch"
        wait_until(lambda: any(scratch.glob("narrate-stitch-*/stream-book.partial.opus")), 60, "the opus encode")
        pid = child_pid(home, worker)[1]
        assert ffmpeg_children(pid)
        assert narrate(e, "cancel", job["id"]).returncode == 0
        st = wait_for_job(job["id"], timeout=30)
        assert st["status"] == "canceled" and st["progress"]["done"] < st["progress"]["total"]
        assert ffmpeg_children(pid) == []
        assert list(scratch.glob("narrate-stitch-*")) == []
        assert not (home / "out").exists() or list((home / "out").iterdir()) == []
    finally:
        stop_worker(worker)


def test_a_full_disk_during_a_streamed_encode_is_the_os_error_and_leaves_nothing(tmp_path):
    # the checkpoints fit under the limit, the flac does not
    proc = stitch_with_file_limit(tmp_path / "book", tmp_path, "book.flac", per_chapter=4, unit_s=10)
    assert proc.returncode != 0 and "FfmpegError: " in proc.stderr and "File too large" in proc.stderr, proc.stderr
    assert list((tmp_path / "s").iterdir()) == []
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_a_killed_job_process_leaves_a_streaming_ffmpeg_that_ends(minute, tmp_path):
    """SIGKILL while the book's ffmpeg is open: it reads the end of its input and exits."""
    root, plan, store = minute
    kill_while_encoding(root, tmp_path, "b.opus")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_the_render_thread_blocked_on_a_stopped_ffmpeg_ends_on_close(minute, tmp_path):
    """An ffmpeg that stops reading (SIGSTOP) blocks the render thread on a full pipe: closing the
    stitch still ends at once, kills it and leaves nothing."""
    import os
    import signal
    import threading
    import time

    from narrate.jobs.audio.book_writer import BookWriter
    from narrate.jobs.audio.segments import Segmenter
    from narrate.jobs.audio.stream_encode import PieceStreams

    root, plan, store = minute
    spec = JobSpec(document="d", voice="a" * 64, output="book.flac")
    out = tmp_path / "out" / "book.flac"
    (tmp_path / "out").mkdir()
    with BookWriter(out, ffmpeg_exe(), root=tmp_path / "out", workdir=tmp_path / "s", wav=False) as book:
        seg = Segmenter(plan, spec)
        streams = PieceStreams(ffmpeg_exe(), book.scratch, ".flac", "", seg.chapters)
        first = threading.Event()
        real = streams.write

        def write(data):
            first.set()
            real(data)

        enc = segment_encoder.SegmentEncoder(plan, spec, store, book.scratch, ffmpeg_exe(), write)
        try:
            streams.write(np.zeros(SR, dtype="<i2"))  # the ffmpeg is up
            proc = streams._book.proc
            os.kill(proc.pid, signal.SIGSTOP)
            enc.walked(*seg.advance(lambda i: stitch_bench._heard(store, plan.keys[i])), seg.units)
            wait_until(first.is_set, 30, "rendering")
            time.sleep(0.5)  # the pipe fills: the render thread is blocked in its write
        finally:
            t0 = time.monotonic()
            streams.close()
            enc.close()
        assert proc.poll() is not None and time.monotonic() - t0 < 10
    assert list((tmp_path / "s").iterdir()) == [] and list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("ext", ["mp3", "flac", "opus"])
def test_chapter_marks_written_after_the_encode_survive_odd_titles_and_their_number(tmp_path, ext):
    """1200 chapters with titles a document may hold: ID3 takes them all, Vorbis comments the
    first 999 (the CHAPTERnnn convention has three digits); the file still plays from its start."""
    from narrate.jobs.audio.bookmeta import Tags
    from narrate.jobs.audio.tagging import MAX_VORBIS_CHAPTERS, write_tags

    path = tmp_path / f"t.{ext}"
    subprocess.run(
        [
            ffmpeg_exe(),
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "anullsrc=r=24000:cl=mono",
            "-t",
            "130",
            "-c:a",
            {"mp3": "libmp3lame", "flac": "flac", "opus": "libopus"}[ext],
            str(path),
        ],
        check=True,
    )
    titles = ['Naïve = "quoted"; #1', "第二章 雨", "x" * 300] + [f"Part {n}" + "!" * (n % 7) for n in range(3, 1200)]
    spans = [(n * 2400, (n + 1) * 2400, t) for n, t in enumerate(titles)]  # every 0.1 s
    write_tags(path, Tags(title="Book"), spans)
    marks = _chapters(path)
    want = len(titles) if ext == "mp3" else MAX_VORBIS_CHAPTERS
    escaped = [t.replace("=", "\\=").replace(";", "\\;").replace("#", "\\#") for t in titles[:want]]
    assert [t for _, t in marks] == escaped  # in reading order, whatever their lengths
    assert [ms for ms, _ in marks][1:] == [n * 100 - (46 if ext == "mp3" else 0) for n in range(1, want)]
    assert decoded_samples(path).size == pytest.approx(130 * SR, abs=2 * SR)
    if ext == "mp3":  # a table of contents lists at most 255 entries: a table of tables
        from mutagen.id3 import ID3

        tables = {f.element_id: f.child_element_ids for f in ID3(path).getall("CTOC")}
        assert tables["toc"] == ["toc1", "toc2", "toc3", "toc4", "toc5"]
        assert sum((tables[f"toc{n}"] for n in range(1, 6)), []) == [f"ch{n}" for n in range(1200)]


def test_a_part_whose_ffmpeg_stops_reading_does_not_hold_up_close(tmp_path, monkeypatch):
    """Parts: a chapter's spilled samples are piped to its part when the next chapter starts. An
    ffmpeg that stops reading then (SIGSTOP) blocks that pipe; close() still returns at once,
    kills it and removes the spill."""
    import os
    import signal
    import threading
    import time

    from narrate.jobs.audio import stream_encode

    stopped = []
    real = stream_encode.PieceStreams._open

    def stopped_open(self, start, name):
        s = real(self, start, name)
        os.kill(s.proc.pid, signal.SIGSTOP)
        stopped.append(s.proc)
        return s

    monkeypatch.setattr(stream_encode.PieceStreams, "_open", stopped_open)
    chapters = [(0, "One"), (3 * SR, "Two")]
    streams = stream_encode.PieceStreams(ffmpeg_exe(), tmp_path, ".flac", "", chapters, max_part_samples=60 * SR)
    failed = []

    def write():
        try:
            streams.write(np.ones(6 * SR, dtype="<i2"))
        except Exception as e:  # its ffmpeg was killed: what the job thread is told, and ignores when stopping
            failed.append(e)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    wait_until(lambda: stopped, 30, "the part's ffmpeg")
    time.sleep(0.5)  # the pipe fills: the drain is blocked
    t0 = time.monotonic()
    streams.close()
    assert time.monotonic() - t0 < 5
    writer.join(30)
    assert not writer.is_alive() and all(p.poll() is not None for p in stopped) and failed
    assert not list(tmp_path.glob("spill-*"))
