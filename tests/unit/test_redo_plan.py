"""A redo's overrides in the job spec and the plan (jobs/book/spec.py, jobs/book/plan.py): left out of the spec's
JSON when empty (job ids stay as they were), checked like every spec value, and applied to their sentences only
(a new seed, a corrected text, lexicon entries of their own), so every other checkpoint key stays; and a redo's
cuts (jobs/audio/segments.py ``Cuts``): a book stitched again after a sentence changed length is cut where it
was, each segment keeping its lead."""

from __future__ import annotations

import pytest
from narrate.jobs.audio.segments import AAC_FRAME, Cuts, Heard, Segmenter
from narrate.jobs.book.plan import Plan, make_plan
from narrate.jobs.book.spec import BadSpec, JobSpec
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.documents.documents import Document
from narrate.jobs.settings import SAMPLE_RATE

SPEC = JobSpec(document="d", voice="a" * 64, output="b.m4b")
DOC = Document(
    "t",
    [["Chapter One"], ["Dr. Smith paid $3.", "Nguyen left.", "It rained."], ["The end."]],
    [(0, "Chapter One")],
    "en",
)


def test_an_empty_redo_leaves_the_spec_json_as_it_was():
    assert "overrides" not in SPEC.to_json() and "accepted" not in SPEC.to_json()
    assert SPEC.model_copy(update=dict(overrides={}, accepted=[])).to_json() == SPEC.to_json()
    redo = SPEC.model_copy(update=dict(overrides={"2": {"seed": 7}}, accepted=[4]))
    assert JobSpec.from_json(redo.to_json()) == redo


@pytest.mark.parametrize(
    "overrides, accepted",
    [
        ({"x": {"seed": 1}}, None),
        ({"-1": {"seed": 1}}, None),
        ({"01": {"seed": 1}}, None),
        ({"2": {}}, None),
        ({"2": {"voice": "x"}}, None),
        ({"2": {"seed": "7"}}, None),
        ({"2": {"seed": -1}}, None),
        ({"2": {"text": ""}}, None),
        ({"2": {"text": "x" * 5000}}, None),
        ({"2": {"text": "a\x00b"}}, None),
        ({"2": {"text": "\ufffftitle"}}, None),
        ({"2": {"text": "\u202eevil"}}, None),
        ({"2": {"text": " \t "}}, None),
        ({"2": {"lexicon": [["a"]]}}, None),
        ({"2": {"lexicon": [["a", 1]]}}, None),
        ([["2", {}]], None),
        (None, [True]),
        (None, ["3"]),
        (None, [-1]),
        (None, {"3": 1}),
    ],
)
def test_a_forged_redo_is_refused(overrides, accepted):
    with pytest.raises(BadSpec):
        JobSpec.from_json({**SPEC.to_json(), "overrides": overrides, "accepted": accepted})


def test_overrides_change_only_their_sentences():
    base = make_plan(DOC, SPEC, "m", "bf16")
    seeded = make_plan(DOC, SPEC.model_copy(update=dict(overrides={"1": {"seed": 7}})), "m", "bf16")
    assert [i for i in range(len(base.keys)) if base.keys[i] != seeded.keys[i]] == [1]
    assert seeded.sentences[1].text == base.sentences[1].text and seeded.sentences[1].seed != base.sentences[1].seed
    corrected = make_plan(DOC, SPEC.model_copy(update=dict(overrides={"2": {"text": "Win left."}})), "m", "bf16")
    assert [i for i in range(len(base.keys)) if base.keys[i] != corrected.keys[i]] == [2]
    assert corrected.originals[2] == "Win left." and corrected.sentences[2].text == "Win left."
    assert corrected.originals[:2] == base.originals[:2] and base.originals[2] == "Nguyen left."
    said = make_plan(DOC, SPEC.model_copy(update=dict(overrides={"2": {"lexicon": [["Nguyen", "Win"]]}})), "m", "bf16")
    assert said.sentences[2].text == "Win left." and said.originals[2] == "Nguyen left."  # subtitles as written
    assert [i for i in range(len(base.keys)) if base.keys[i] != said.keys[i]] == [2]
    # the job's own lexicon still applies to the sentence; the override's entries win over it
    win = {"lexicon": [["Nguyen", "Win"]]}
    both = SPEC.model_copy(
        update=dict(lexicon=[["Smith", "Smyth"], ["Nguyen", "Nwen"]], overrides={"1": win, "2": win})
    )
    plan = make_plan(DOC, both, "m", "bf16")
    assert plan.sentences[1].text.startswith("Doctor Smyth") and plan.sentences[2].text == "Win left."
    with pytest.raises(BadSpec, match="beyond"):
        make_plan(DOC, SPEC.model_copy(update=dict(overrides={"9": {"seed": 1}})), "m", "bf16")


def _plan(n: int) -> Plan:
    sentences = [Sentence(i, f"s{i}", i, 100) for i in range(n)]
    return Plan(
        sentences,
        frozenset(i for i in range(n) if i % 5 == 4),
        {0: "One", 30: "Two"},
        [f"k{i}" for i in range(n)],
        [s.text for s in sentences],
    )


def _walk(plan: Plan, lengths: list[int], follow: Cuts | None = None) -> Segmenter:
    seg = Segmenter(plan, SPEC, unit_samples=30 * SAMPLE_RATE, block_samples=8 * SAMPLE_RATE, follow=follow)
    seg.advance(lambda i: Heard(lengths[i], 1, False, 1))
    assert seg.done
    return seg


@pytest.mark.parametrize("delta", [1, -700, 333, 2 * SAMPLE_RATE, -SAMPLE_RATE])
def test_a_redo_cuts_where_the_book_it_redoes_was_cut(delta):
    n = 60
    plan = _plan(n)
    lengths = [SAMPLE_RATE * 3 + 37 * i for i in range(n)]
    first = _walk(plan, lengths)
    cuts = Cuts(frozenset(u.first for u in first.units[1:]), {s.first: s.lead for s in first.segments[1:]})
    changed = list(lengths)
    changed[17] += delta  # sentence 17, another take of another length
    again = _walk(plan, changed, cuts)
    assert [(s.first, s.last, s.unit) for s in again.segments] == [(s.first, s.last, s.unit) for s in first.segments]
    assert all(s.samples % AAC_FRAME == 0 for s in again.segments[:-1])
    assert [s.start for s in again.segments] == [0] + [s.end for s in again.segments[:-1]]
    hit = next(s.index for s in first.segments if s.first <= 17 <= s.last)
    for a, b in zip(first.segments, again.segments, strict=True):
        assert a.lead == b.lead  # every segment starts as it did
        if a.index != hit:
            assert (a.tail, a.samples) == (b.tail, b.samples)  # and, but the redone one, is what it was
    b = again.segments[hit]
    pad = b.tail + (again.segments[hit + 1].lead if hit + 1 < len(again.segments) else 0) - again.pause(b.last)
    assert 0 <= pad < AAC_FRAME  # its pause grew by less than a frame
    assert again.samples == sum(changed) + sum(again.pause(i) for i in range(n)) + pad
    cues = {c.index: c for c in again.cues}
    assert all(cues[s.first].start == s.start + s.lead for s in again.segments)


@pytest.mark.parametrize(
    "raw, spoken",
    [
        ("  Win \t left.  ", "Win left."),
        ("Win\x00 left.", "Win left."),
        ("\u202eWin left.\uffff", "Win left."),
        (" \x00\t ", ""),
        ("\ufffe\uffff", ""),
        ("\u200f \u2066", ""),
    ],
)
def test_a_corrected_text_is_cleaned_before_it_is_judged_empty(raw, spoken):
    """NUL, U+FFFF, U+202E and whitespace never reach the captions, manifests and EPUB, and what is left decides
    whether the correction says anything (the redo refuses an empty one)."""
    from narrate.jobs.book.spec import corrected

    assert corrected(raw) == spoken
    if spoken:
        assert JobSpec.from_json({**SPEC.to_json(), "overrides": {"2": {"text": spoken}}}).overrides
