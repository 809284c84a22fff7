"""Where the book is cut (jobs/audio/segments.py), from sample counts alone: units at chapters and after
long stretches at paragraph pauses, segments inside units, every cut in a pause on an AAC frame
boundary of its segment with silence after it, and no cut in a pause too short to hold one."""

from __future__ import annotations

from narrate.jobs.audio.segments import AAC_FRAME, CUT_SILENCE, Heard, Segmenter, cuts_at_chapters
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.settings import SAMPLE_RATE


def _plan(n: int, chapters: dict[int, str]) -> Plan:
    sentences = [Sentence(i, f"s{i}", i, 100) for i in range(n)]
    return Plan(
        sentences,
        frozenset(i for i in range(n) if i % 5 == 4),
        chapters,
        [f"k{i}" for i in range(n)],
        [s.text for s in sentences],
    )


def _walk(plan: Plan, spec: JobSpec, lengths: list[int], **kw) -> Segmenter:
    seg = Segmenter(plan, spec, **kw)
    for arrived in range(1, len(lengths) + 1):  # one sentence at a time, as synthesis finishes them
        seg.advance(lambda i, n=arrived: Heard(lengths[i], 1, False, 1) if i < n else None)
    assert seg.done
    return seg


def test_cuts_lie_in_pauses_on_frame_boundaries_with_silence_after():
    n = 60
    lengths = [SAMPLE_RATE * 3 + 37 * i for i in range(n)]
    plan = _plan(n, {0: "One", 20: "Two", 41: "Three"})
    spec = JobSpec(document="d", voice="a" * 64, output="b.m4b")
    seg = _walk(plan, spec, lengths, unit_samples=30 * SAMPLE_RATE, block_samples=10 * SAMPLE_RATE)
    segs, units = seg.segments, seg.units
    assert [u.first for u in units][:1] == [0] and {20, 41} <= {u.first for u in units}  # every chapter
    assert len(units) > 3 and len(segs) > len(units)  # and inside chapters, segments inside units
    assert all(s.samples % AAC_FRAME == 0 for s in segs[:-1])
    assert [s.start for s in segs] == [0] + [s.end for s in segs[:-1]] and segs[-1].end == seg.samples
    cues = {c.index: c for c in seg.cues}
    for s in segs:
        assert s.lead >= CUT_SILENCE or s.index == 0  # the pause's rest opens the next segment
        assert cues[s.first].start == s.start + s.lead and cues[s.last].end + s.tail == s.end
        assert s.tail < AAC_FRAME
    total = sum(lengths) + sum(seg.pause(i) for i in range(n))
    assert seg.samples == total  # cutting adds and removes nothing
    assert [a for a, _ in seg.chapters] == [cues[i].start for i in (0, 20, 41)]


def test_a_pause_too_short_for_a_cut_is_never_cut():
    n = 30
    plan = _plan(n, {0: "One", 15: "Two"})
    short = JobSpec(
        document="d", voice="a" * 64, output="b.m4b", sentence_pause_ms=50, paragraph_pause_ms=50, chapter_pause_ms=50
    )
    assert not cuts_at_chapters(plan, short) and cuts_at_chapters(
        plan, JobSpec(document="d", voice="a" * 64, output="b")
    )
    seg = _walk(plan, short, [SAMPLE_RATE * 4] * n, unit_samples=SAMPLE_RATE, block_samples=SAMPLE_RATE)
    assert len(seg.segments) == 1 and len(seg.units) == 1  # one piece, the whole book


def test_an_mp3_book_is_cut_on_mp3_frames_with_two_frames_of_its_pause_before_each_cut():
    from narrate.jobs.audio.segments import MP3, MP3_FRAME, grid_for

    n = 60
    lengths = [SAMPLE_RATE * 3 + 37 * i for i in range(n)]
    plan = _plan(n, {0: "One", 20: "Two", 41: "Three"})
    spec = JobSpec(document="d", voice="a" * 64, output="b.mp3")
    assert grid_for(spec) == MP3 and grid_for(JobSpec(document="d", voice="a" * 64, output="b.M4B")).frame == 1024
    seg = _walk(plan, spec, lengths, unit_samples=30 * SAMPLE_RATE, block_samples=10 * SAMPLE_RATE)
    segs = seg.segments
    assert len(segs) > len(seg.units) > 3
    assert all(s.samples % MP3_FRAME == 0 for s in segs[:-1]) and any(s.samples % AAC_FRAME for s in segs[:-1])
    for s in segs[:-1]:  # the silence its last frame and the next one's first stand for
        assert MP3.head <= s.tail < MP3.head + MP3_FRAME
    assert all(s.lead >= CUT_SILENCE for s in segs[1:])
    assert seg.samples == sum(lengths) + sum(seg.pause(i) for i in range(n))
    # a pause that holds an AAC cut but not an mp3 one is not cut
    tight = dict(sentence_pause_ms=135, paragraph_pause_ms=135, chapter_pause_ms=135)  # 3240 samples
    assert cuts_at_chapters(plan, JobSpec(document="d", voice="a" * 64, output="b.m4b", **tight))
    assert not cuts_at_chapters(plan, JobSpec(document="d", voice="a" * 64, output="b.mp3", **tight))
