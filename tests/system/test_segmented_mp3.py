"""An mp3 book encoded in segments while it is synthesized (jobs/audio/segments.py MP3 grid, segment_encoder.py,
mp3frames.py): a minute of speech-like audio from the stitch bench, encoded segment by segment into raw MP3 frames,
joined and muxed, decoded with ffmpeg and compared with the exact samples and with one encode of them all: no
added silence (exactly as many samples as the one encode), no click at a join, the chapter marks at their
sentences; the mux writes the LAME tag's delay, padding and CRC; split or in parts, an mp3 is streamed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.audio import SR, decoded_samples
from narrate.jobs.audio import mp3frames
from narrate.jobs.audio.segments import CUT_SILENCE, MP3, MP3_FRAME
from narrate.jobs.book.spec import JobSpec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # the benchmarks' helpers
import stitch_bench  # noqa: E402

SPEC = dict(document="d", voice="a" * 64, output="book.mp3")


@pytest.fixture(scope="module")
def minute(tmp_path_factory):
    """A minute of speech-like sentences, a chapter every 4 sentences, paragraphs of 5."""
    root = tmp_path_factory.mktemp("minute-mp3")
    plan, store = stitch_bench.make_book(root, 1 / 60, per_chapter=4)
    return root, plan, store


def lame_tag(path) -> tuple[int, int, int]:
    """(frames, encoder delay, padding) as the file's Xing frame and LAME tag say (after any ID3 tag)."""
    data = path.read_bytes()
    if data[:3] == b"ID3":
        data = data[10 + ((data[6] << 21) | (data[7] << 14) | (data[8] << 7) | data[9]) :]
    at = 4 + mp3frames.SIDE_INFO
    assert data[at : at + 4] in (b"Info", b"Xing")
    packed = int.from_bytes(data[at + mp3frames.LAME + 21 : at + mp3frames.LAME + 24], "big")
    crc = int.from_bytes(data[at + mp3frames.CRC_AT : at + mp3frames.CRC_AT + 2], "big")
    assert crc == mp3frames.crc16(data[: at + mp3frames.CRC_AT])  # the tag's CRC, or players ignore the tag
    return int.from_bytes(data[at + 8 : at + 12], "big"), packed >> 12, packed & 0xFFF


def test_segmented_mp3_is_as_long_as_one_encode_and_has_no_clicks_at_joins(minute, tmp_path):
    root, plan, store = minute
    spec = JobSpec(**SPEC, loudness=None)
    got = stitch_bench.segmented(
        plan, store, spec, tmp_path / "out" / "book.mp3", tmp_path / "s", None, unit_s=10, block_s=5
    )
    segs = got["segments"]
    assert len(segs) > len(got["units"]) > len(plan.chapter_at) >= 3  # cut at every chapter and inside
    assert all(s.samples % MP3_FRAME == 0 for s in segs[:-1]) and segs[-1].end == got["samples"]
    stitch_bench.old(plan, store, spec, tmp_path / "out" / "exact.wav", tmp_path / "s")
    stitch_bench.old(plan, store, spec, tmp_path / "out" / "direct.mp3", tmp_path / "s")  # one encode of it all
    exact = decoded_samples(tmp_path / "out" / "exact.wav").astype(np.float64) / 32768
    direct = decoded_samples(tmp_path / "out" / "direct.mp3").astype(np.float64) / 32768
    decoded = decoded_samples(tmp_path / "out" / "book.mp3").astype(np.float64) / 32768
    assert decoded.size == exact.size == direct.size == got["samples"]  # no silence added, none lost
    frames, delay, padding = lame_tag(tmp_path / "out" / "book.mp3")
    assert delay == 576 and frames * MP3_FRAME - delay - padding == got["samples"]
    largest_step = np.abs(np.diff(exact)).max()
    for j in (s.start for s in segs[1:]):
        assert not exact[j - MP3.head : j + CUT_SILENCE].any()  # every cut lies in a pause, silence around it
        w = slice(j - 3000, j + 3000)
        # around a join the segmented book is as close to the samples as the one encode is there, its silence
        # as quiet, and no step is larger than the signal's own
        assert np.abs(decoded[w] - exact[w]).max() <= 2 * np.abs(direct[w] - exact[w]).max() + 0.002
        quiet = slice(j - MP3.head, j + CUT_SILENCE)
        assert np.abs(decoded[quiet]).max() <= 2 * np.abs(direct[quiet]).max() + 0.002
        assert np.abs(np.diff(decoded[w])).max() <= largest_step
    # chapters at their first sentence (ID3 CHAP frames: mutagen, after the mux), the length players read
    from mutagen.id3 import ID3
    from mutagen.mp3 import MP3 as Mp3File

    tag = ID3(tmp_path / "out" / "book.mp3")
    marks = sorted(f.start_time for f in tag.getall("CHAP"))
    assert marks == pytest.approx([round(a * 1000 / SR) for a, _ in got["chapters"]], abs=1)
    # mutagen reads the length from the frame count (it takes the delay and padding of LAME's own tag only, and
    # ffmpeg names itself there): within a frame of the one encode's
    length = Mp3File(tmp_path / "out" / "book.mp3").info.length
    assert abs(length - Mp3File(tmp_path / "out" / "direct.mp3").info.length) <= MP3_FRAME / SR + 1e-9


def test_an_mp3_split_or_in_parts_is_streamed_and_in_one_file_is_segmented(minute):
    """Chapter marks of a split's or a part's file are written from its chapter's first sample: those files are
    one encode each (jobs/audio/stream_encode.py)."""
    from pathlib import Path

    from narrate.jobs.task.stitcher import EncodePath

    root, plan, store = minute
    out = Path("book.mp3")
    assert EncodePath.choose(out, plan, JobSpec(**SPEC)) == EncodePath(".mp3", segmented=True, streamed=False)
    for extra in ({"split": "chapters"}, {"split": "chapters+book"}, {"max_part_hours": 25 / 3600}):
        assert EncodePath.choose(out, plan, JobSpec(**SPEC, **extra)) == EncodePath(".mp3", False, True), extra


def test_the_lame_tag_crc_is_crc16_arc():
    assert mp3frames.crc16(b"123456789") == 0xBB3D  # the check value of CRC-16/ARC
