"""The proof pass's verdict (jobs/proof/verdict.py) on transcripts built for each defect class: a dropped word, a
repeated phrase, a truncated ending, a runaway, a made-up tail; pace and silences from the samples."""

from __future__ import annotations

import json

import numpy as np
import pytest
from narrate.jobs.proof.verdict import Thresholds, Verdict, judge, sound_and_silence, units
from narrate.jobs.settings import Settings

SENTENCE = "The quick brown fox jumps over the lazy dog near the river bank."  # 13 words as spoken
SR = 24_000


def take(*parts: tuple[str, float]) -> np.ndarray:
    """A take's samples: ("sound", s) noise at speech level, ("quiet", s) silence."""
    rng = np.random.default_rng(0)
    out = [rng.normal(0, 0.1, int(s * SR)) if kind == "sound" else np.zeros(int(s * SR)) for kind, s in parts]
    return np.concatenate(out).astype(np.float32)


NATURAL = take(("quiet", 0.2), ("sound", 2.4), ("quiet", 0.4), ("sound", 2.4), ("quiet", 0.3))  # 13 words in 5.2 s


def test_a_faithful_take_is_ok():
    v = judge(SENTENCE, "the quick brown fox jumps over the lazy dog near the river bank", NATURAL)
    assert v.ok and v.reasons == () and v.wer == 0.0 and v.words == 13
    assert v.rate == pytest.approx(13 / 5.2, rel=0.02) and v.silence_s == pytest.approx(0.4, abs=0.03)


def test_numbers_abbreviations_case_and_punctuation_compare_as_spoken():
    """The sentence is compared as narrate speaks it; the transcript goes through the same normalization."""
    spoken = "Dr. Smith paid $42 on the 3rd of May, didn't he?"
    assert judge(spoken, "Doctor Smith paid forty-two dollars on the third of May. Didnt he", None).ok
    assert judge(spoken, "dr smith paid $42 on the 3rd of may didn't he", None).ok
    assert units("Forty-two, it's fine!") == ["forty", "two", "its", "fine"]


def test_a_dropped_word():
    v = judge(SENTENCE, "the quick fox jumps over the lazy dog near the river bank", NATURAL)
    assert not v.ok and v.reasons == ("dropped",) and v.dropped == ("brown",)
    assert v.wer == pytest.approx(1 / 13, abs=1e-3)  # under the WER threshold: flagged for the drop itself


def test_two_words_heard_as_one_are_not_dropped():
    v = judge("Every one of them came to the old house.", "everyone of them came to the old house", None)
    assert v.dropped == () and "dropped" not in v.reasons


def test_a_repeated_phrase():
    v = judge(SENTENCE, "the quick brown fox the quick brown fox jumps over the lazy dog near the river bank", NATURAL)
    assert "repeated" in v.reasons and v.repeated == ("the quick brown fox",)
    assert v.inserted == ("the", "quick", "brown", "fox")


def test_a_stuttered_word():
    v = judge(SENTENCE, "the quick brown fox jumps jumps over the lazy dog near the river bank", NATURAL)
    assert v.reasons == ("repeated",) and v.repeated == ("jumps",)


def test_a_truncated_ending():
    cut = take(("quiet", 0.2), ("sound", 3.6))
    v = judge(SENTENCE, "the quick brown fox jumps over the lazy dog near the", cut)
    assert not v.ok and v.ending and "ending" in v.reasons and v.dropped == ("river", "bank")


def test_one_misheard_last_word_is_no_lost_ending():
    v = judge(SENTENCE, "the quick brown fox jumps over the lazy dog near the river tank", NATURAL)
    assert not v.ending and v.ok  # 1/13 substituted: under the WER threshold, nothing dropped


def test_a_hallucinated_tail():
    heard = "the quick brown fox jumps over the lazy dog near the river bank thank you for watching"
    v = judge(SENTENCE, heard, NATURAL)
    assert "tail" in v.reasons and v.tail == ("thank", "you", "for", "watching")
    short = judge(SENTENCE, "the quick brown fox jumps over the lazy dog near the river bank yes", NATURAL)
    assert "tail" not in short.reasons and short.ok  # one extra word: under NARRATE_PROOF_TAIL_WORDS and the WER


def test_a_runaway_take():
    """The budget used up: the sentence, then babble until the frame budget: far too slow a pace, and what the
    recognizer makes of the babble is a tail."""
    runaway = take(("sound", 5.0), ("quiet", 0.3), ("sound", 25.0))
    v = judge(SENTENCE, "the quick brown fox jumps over the lazy dog near the river bank", runaway)
    assert v.reasons == ("rate",) and v.rate is not None and v.rate < v.norm / 1.8  # type: ignore[operator]
    babble = judge(SENTENCE, "the quick brown fox jumps over the lazy dog near the river bank la la la la", runaway)
    assert set(babble.reasons) == {"rate", "tail", "wer"}


def test_a_rushed_take_and_the_voices_own_norm():
    rushed = take(("sound", 1.5))
    assert "rate" in judge(SENTENCE, SENTENCE, rushed).reasons  # 8.7 words a second
    assert judge(SENTENCE, SENTENCE, rushed, norm=7.0).ok  # a voice that fast is its own norm
    assert "rate" not in judge("Yes, I do.", "yes i do", take(("sound", 4.0))).reasons  # too short to judge pace


def test_a_long_inner_silence():
    gap = take(("quiet", 1.0), ("sound", 2.4), ("quiet", 2.2), ("sound", 2.4), ("quiet", 3.0))
    v = judge(SENTENCE, SENTENCE, gap)
    assert v.reasons == ("silence",) and v.silence_s == pytest.approx(2.2, abs=0.03)  # the edges do not count
    assert judge(SENTENCE, SENTENCE, gap, thresholds=Thresholds(max_silence_s=2.5)).ok


def test_a_take_heard_as_nothing():
    v = judge(SENTENCE, "", take(("quiet", 2.0)))
    assert set(v.reasons) >= {"wer", "dropped", "ending"} and v.wer == 1.0
    assert sound_and_silence(np.zeros(SR, np.float32)) == (0.0, 0.0)


def test_chinese_is_aligned_by_character():
    v = judge("我们明天去公园散步。", "我们明天去公园", None, language="chinese")
    assert v.words == 9 and v.dropped == ("散", "步") and v.ending


def test_thresholds_come_from_the_settings(monkeypatch):
    monkeypatch.setenv("NARRATE_PROOF_MAX_WER", "0.5")
    monkeypatch.setenv("NARRATE_PROOF_TAIL_WORDS", "5")
    t = Thresholds.from_settings(Settings.from_env())
    assert (t.max_wer, t.tail_words, t.ending_words) == (0.5, 5, 2)
    v = judge(
        SENTENCE,
        "the quick brown fox jumps over the lazy dog near the river bank thank you for watching",
        NATURAL,
        thresholds=t,
    )
    assert v.ok


def test_the_verdict_is_json_and_ranks_takes():
    bad = judge(SENTENCE, "the quick brown fox jumps over the", NATURAL)
    good = judge(SENTENCE, SENTENCE, NATURAL)
    again = Verdict.from_json(json.loads(json.dumps(bad.to_json())))
    assert again == bad and again.said() == bad.said() and "lost its ending" in bad.said()
    assert min([bad, good], key=Verdict.score) is good
