"""A redo's stitch (jobs/audio/reuse.py): a minute of speech-like audio stitched to m4b and to mp3, one sentence
replaced by a take of another length, the book stitched again following the first stitch: only the segment holding
it is encoded again, the others are the first stitch's own bytes, every segment starts as it did, and the book
decodes to the exact samples (rendered to WAV the same way; an mp3 to exactly as many) with no click at any
join."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.audio import decoded_samples
from narrate.jobs.audio.reuse import Reuse, SegmentCache, fingerprint
from narrate.jobs.audio.segments import AAC_FRAME, CUT_SILENCE, MP3, grid_for
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.outputs.outputs import FORMATS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import restitch_bench  # noqa: E402
import stitch_bench  # noqa: E402

SIZES = {"unit_s": 10, "block_s": 5}  # units at chapters and after 10 s, segments after 5 s


@pytest.mark.parametrize("ext, longer", [("m4b", True), ("m4b", False), ("mp3", True), ("mp3", False)])
def test_a_redo_encodes_only_the_segment_it_changed_and_joins_without_a_click(tmp_path, ext, longer):
    plan, store = stitch_bench.make_book(tmp_path, 1 / 60, per_chapter=4)
    spec = JobSpec(document="d", voice="a" * 64, output=f"book.{ext}", loudness=-19.0)
    frame = grid_for(spec).frame
    cache = SegmentCache(tmp_path / "segments", 10**9)
    out = tmp_path / "out"
    out.mkdir()
    full = restitch_bench.stitch(
        plan, store, spec, out / f"full.{ext}", tmp_path / "s", Reuse(cache, None, fingerprint(plan, spec)), **SIZES
    )
    index = len(plan.sentences) // 2
    again = restitch_bench.redone(plan, store, index, 5.3 if longer else 3.1)
    follow = cache.record("full")
    assert follow is not None and follow.segments == full["record"].segments
    redo = restitch_bench.stitch(
        again, store, spec, out / f"redo.{ext}", tmp_path / "s", Reuse(cache, follow, fingerprint(again, spec)), **SIZES
    )
    segs = redo["segment_list"]
    hit = next(s.index for s in segs if s.first <= index <= s.last)
    assert len(segs) == full["segments"] > 4 and redo["segments_reused"] == len(segs) - 1
    assert redo["sentences_measured"] == 1  # the redone sentence's true peak; the units keep their gains
    was, now = full["record"].segments, redo["record"].segments
    assert [k for k, (a, b) in enumerate(zip(was, now, strict=True)) if a != b] == [hit]
    assert [s.lead for s in segs] == [s.lead for s in full["segment_list"]]
    # the exact samples: the same stitch rendered to WAV (it follows the record too: the same cuts and gains)
    exact_run = restitch_bench.stitch(
        again, store, spec, out / "exact.wav", tmp_path / "s", Reuse(None, follow, fingerprint(again, spec)), **SIZES
    )
    assert exact_run["samples"] == redo["samples"]
    exact = decoded_samples(out / "exact.wav").astype(np.float64) / 32768
    direct_file = out / f"direct.{ext}"  # one encode of the exact samples: the codec's own error
    subprocess.run(
        [ffmpeg_exe(), "-v", "error", "-y", "-i", str(out / "exact.wav"), *FORMATS[f".{ext}"][1], str(direct_file)],
        check=True,
    )
    direct = decoded_samples(direct_file).astype(np.float64) / 32768
    decoded = decoded_samples(out / f"redo.{ext}").astype(np.float64) / 32768
    if ext == "mp3":  # the LAME tag's delay and padding: exactly the samples, as the one encode
        assert decoded.size == exact.size == direct.size
    else:  # under one AAC frame of padding
        assert 0 <= decoded.size - exact.size < AAC_FRAME
    largest_step = np.abs(np.diff(exact)).max()
    for j in (s.start for s in segs[1:]):
        assert not exact[j : j + CUT_SILENCE].any() and (ext != "mp3" or not exact[j - MP3.head : j].any())
        w = slice(j - 3000, j + 3000)
        assert np.abs(decoded[w] - exact[w]).max() <= 2 * np.abs(direct[w] - exact[w]).max() + 0.002
        assert np.abs(np.diff(decoded[w])).max() <= largest_step
    # the redone sentence is where the cues say, and everything after it moved by its new length and a pad
    cues = {c.index: c for c in redo["cues"]}
    before = {c.index: c for c in full["cues"]}
    moved = (cues[index].end - cues[index].start) - (before[index].end - before[index].start)
    assert moved != 0 and all(cues[i].start == before[i].start for i in range(index + 1))
    assert all(cues[i].start - before[i].start == moved for i in range(index + 1, segs[hit].last + 1))
    after = segs[hit].last + 1
    pad = cues[after].start - before[after].start - moved
    assert 0 <= pad < frame  # the pause at the cut after it grew by less than a frame
    assert all(cues[i].start - before[i].start == moved + pad for i in range(after, len(cues)))
