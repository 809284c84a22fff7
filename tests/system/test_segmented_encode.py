"""The book encoded in segments while it is synthesized (jobs/audio/segments.py, segment_encoder.py,
adts.py): a minute of speech-like audio from the stitch bench, encoded segment by segment, joined
and muxed into m4b, decoded with ffmpeg and compared with the exact samples; overlap and cancel
with the fake engine in a real worker."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
from helpers.audio import SR, decoded_samples
from helpers.encode import ffmpeg_children, kill_while_encoding, stitch_with_file_limit
from helpers.fake import fake_env
from helpers.procs import narrate, wait_for_job, wait_until
from narrate.jobs.audio import segment_encoder
from narrate.jobs.audio.book_writer import BookWriter
from narrate.jobs.audio.segments import AAC_FRAME, CUT_SILENCE, Segmenter
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.ffmpeg import ffmpeg_exe

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # the benchmarks' helpers
import stitch_bench  # noqa: E402

SPEC = dict(document="d", voice="a" * 64, output="book.m4b")


@pytest.fixture(scope="module")
def minute(tmp_path_factory):
    """A minute of speech-like sentences, a chapter every 4 sentences, paragraphs of 5."""
    root = tmp_path_factory.mktemp("minute")
    plan, store = stitch_bench.make_book(root, 1 / 60, per_chapter=4)
    return root, plan, store


def _chapter_starts_ms(path) -> list[int]:
    meta = subprocess.run(
        [ffmpeg_exe(), "-v", "error", "-i", str(path), "-f", "ffmetadata", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = re.findall(r"^TIMEBASE=(\d+)/(\d+)\s+START=(\d+)$", meta, re.M)
    return [round(int(start) * int(num) * 1000 / int(den)) for num, den, start in found]


def test_segmented_m4b_is_exact_and_has_no_clicks_at_joins(minute, tmp_path):
    root, plan, store = minute
    spec = JobSpec(**SPEC, loudness=None)
    # units at chapters and at paragraph pauses after 10 s, segments at sentence pauses after 5 s
    got = stitch_bench.segmented(
        plan, store, spec, tmp_path / "out" / "book.m4b", tmp_path / "s", None, unit_s=10, block_s=5
    )
    segs = got["segments"]
    assert len(segs) > len(got["units"]) > len(plan.chapter_at) >= 3  # cut at every chapter and inside
    assert all(s.samples % AAC_FRAME == 0 for s in segs[:-1]) and segs[-1].end == got["samples"]
    stitch_bench.old(plan, store, spec, tmp_path / "out" / "exact.wav", tmp_path / "s")
    stitch_bench.old(plan, store, spec, tmp_path / "out" / "direct.m4b", tmp_path / "s")  # one encode
    exact = decoded_samples(tmp_path / "out" / "exact.wav").astype(np.float64) / 32768
    direct = decoded_samples(tmp_path / "out" / "direct.m4b").astype(np.float64) / 32768
    decoded = decoded_samples(tmp_path / "out" / "book.m4b").astype(np.float64) / 32768
    assert exact.size == got["samples"] == direct.size
    assert 0 <= decoded.size - exact.size < AAC_FRAME  # the last frame's padding, nothing else
    largest_step = np.abs(np.diff(exact)).max()
    for j in (s.start for s in segs[1:]):
        assert not exact[j : j + CUT_SILENCE].any()  # every cut lies in a pause, with silence after it
        w = slice(j - 3000, j + 3000)
        # around a join the segmented book is as close to the samples as a single encode is there,
        # and no step is larger than the signal's own
        assert np.abs(decoded[w] - exact[w]).max() <= 2 * np.abs(direct[w] - exact[w]).max() + 0.002
        assert np.abs(np.diff(decoded[w])).max() <= largest_step
    # chapters at their first sentence, the cues on the audio
    starts = [round(a * 1000 / SR) for a, _ in got["chapters"]]
    assert _chapter_starts_ms(tmp_path / "out" / "book.m4b") == pytest.approx(starts, abs=1)
    assert [c.start for c in got["cues"] if c.index in plan.chapter_at] == [a for a, _ in got["chapters"]]
    assert abs(got["cues"][-1].end - decoded.size) <= AAC_FRAME


def test_each_segment_reaches_the_loudness_target_and_so_does_the_book(minute, tmp_path):
    root, plan, store = minute
    meter = pyloudnorm.Meter(SR)
    for target in (-19.0, -23.0):  # (louder targets: the true-peak ceiling rules for this crest factor)
        spec = JobSpec(**SPEC, loudness=target)
        out = tmp_path / "out" / f"loud{target}.m4b"
        got = stitch_bench.segmented(plan, store, spec, out, tmp_path / "s", None, block_s=5)
        assert len(got["segments"]) > len(got["units"])  # a unit's segments share its gain
        x = decoded_samples(out).astype(np.float64) / 32768
        assert meter.integrated_loudness(x) == pytest.approx(target, abs=1.0)
        assert 20 * np.log10(np.abs(x).max()) < -3.0
        for u in got["units"]:
            part = x[u.segments[0].start : u.segments[-1].end]
            assert meter.integrated_loudness(part) == pytest.approx(target, abs=1.0)


def test_a_part_and_chapter_files_are_muxed_from_their_segments(minute, tmp_path):
    """`--split chapters+book --max-part-hours`: every file from the segments it covers; the parts
    add up to the book exactly (every cut but the book's last is a whole number of frames)."""
    root, plan, store = minute
    spec = JobSpec(**SPEC, loudness=None, split="chapters+book", max_part_hours=25 / 3600)
    out = tmp_path / "out" / "book.m4b"
    got = stitch_bench.segmented(plan, store, spec, out, tmp_path / "s", None)
    parts = sorted((tmp_path / "out").glob("book - part *.m4b"))
    chapters = sorted((tmp_path / "out" / "book").glob("*.m4b"))
    assert len(parts) >= 2 and len(chapters) == len(plan.chapter_at)
    for files in (parts, chapters):
        sizes = [decoded_samples(p).size for p in files]
        assert 0 <= sum(sizes) - got["samples"] < AAC_FRAME, sizes
        assert all(n % AAC_FRAME == 0 for n in sizes[:-1])


def test_close_during_an_encode_kills_ffmpeg_and_leaves_nothing(minute, tmp_path, monkeypatch):
    root, plan, store = minute
    spec = JobSpec(**SPEC)
    writing = threading.Event()
    real = segment_encoder.render_segment

    def stuck(seg, stream, gains, write, alive):  # the first samples, then wait for the stop
        real(seg, stream, gains, write, alive)
        writing.set()
        wait_until(lambda: not alive(), timeout=60)

    monkeypatch.setattr(segment_encoder, "render_segment", stuck)
    out = tmp_path / "out" / "book.m4b"
    (tmp_path / "out").mkdir()
    work = tmp_path / "s"
    procs = []
    with BookWriter(out, ffmpeg_exe(), root=tmp_path / "out", workdir=work, wav=False) as book:
        enc = segment_encoder.SegmentEncoder(plan, spec, store, book.scratch, ffmpeg_exe())
        seg = Segmenter(plan, spec)
        enc.walked(*seg.advance(lambda i: stitch_bench._heard(store, plan.keys[i])), seg.units)
        assert writing.wait(60)
        procs = [e.proc for e in enc._procs]
        assert procs and all(p.poll() is None for p in procs)  # ffmpeg is encoding
        enc.close()
        assert all(p.poll() is not None for p in procs)
    assert list(work.iterdir()) == [] and list((tmp_path / "out").iterdir()) == []


def test_cancel_while_segments_are_encoded_leaves_no_ffmpeg_and_no_file(env, home, voice_wav, external_redis):
    """A book of many short chapters: segments are encoded while it is synthesized; canceled then,
    the job leaves no ffmpeg child, no scratch directory and nothing in the output directory."""
    from helpers.ops import submit_json
    from helpers.procs import child_pid, start_worker, stop_worker

    e = fake_env(env, home, delay_ms=60)
    doc = home / "many.md"
    doc.write_text("\n\n".join(f"# Part {c}\n\nLine {c} one is here. Line {c} two is here." for c in range(40)))
    [job] = submit_json(e, [doc], voice_wav, "-o", str(home / "out" / "many.m4b"))
    worker = start_worker(e)
    try:
        scratch = home / "stitch"
        wait_until(lambda: any(scratch.glob("narrate-stitch-*/seg-*.aac")), 60, "a segment encoded")
        pid = child_pid(home, worker)[1]
        assert narrate(e, "cancel", job["id"]).returncode == 0
        st = wait_for_job(job["id"], timeout=30)
        assert st["status"] == "canceled" and st["progress"]["done"] < st["progress"]["total"]
        assert ffmpeg_children(pid) == []
        assert list(scratch.glob("narrate-stitch-*")) == []
        assert not (home / "out").exists() or list((home / "out").iterdir()) == []
    finally:
        stop_worker(worker)


def test_a_full_disk_during_a_segment_encode_is_the_os_error_and_leaves_nothing(minute, tmp_path):
    """A file-size limit (EFBIG, a stand-in for a full disk) hit by a segment's ffmpeg: the stitch
    fails with ffmpeg's line naming the OS error; no output, no scratch directory."""
    root, plan, store = minute
    # one segment of a minute: the checkpoints fit under the limit, the segment does not
    proc = stitch_with_file_limit(tmp_path / "book", tmp_path, "book.m4b", per_chapter=100)
    assert proc.returncode != 0 and "FfmpegError: " in proc.stderr and "File too large" in proc.stderr, proc.stderr
    assert list((tmp_path / "s").iterdir()) == []
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_a_killed_job_process_leaves_an_ffmpeg_that_ends_and_a_scratch_dir_the_next_book_removes(minute, tmp_path):
    """SIGKILL of the job's process while a segment is being encoded: its ffmpeg reads the end of
    its input and exits; the next book written on the host removes the dead scratch directory."""
    root, plan, store = minute
    kill_while_encoding(root, tmp_path, "b.m4b")
    assert len(list((tmp_path / "s").iterdir())) == 1  # the dead writer's scratch directory
    with BookWriter(tmp_path / "out" / "next.wav", ffmpeg_exe(), root=tmp_path / "out", workdir=tmp_path / "s") as book:
        book.write_pcm(np.zeros(2400, dtype="<i2"))
        book.finish()
    assert list((tmp_path / "s").iterdir()) == []
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["next.wav"]
