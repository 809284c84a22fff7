"""Which recognizer a job's proof pass uses (jobs/proof/recognizer_choice.py), and the tokens a take may cost it."""

from __future__ import annotations

from narrate.jobs.proof.recognizer_choice import (
    ANY,
    ENGLISH,
    EUROPEAN,
    LIMIT_EXTRA,
    TOKENS_A_SECOND,
    limit_of,
    proof_model,
    token_limit,
)


def test_a_named_recognizer_wins():
    assert proof_model("/models/my-asr", {"english"}, configured="org/other") == "/models/my-asr"


def test_auto_takes_the_workers_setting_then_goes_by_language():
    assert proof_model("auto", {"english"}, configured="org/asr") == "org/asr"
    assert proof_model("default", {"english"}) == ENGLISH
    assert proof_model("auto", {"english", "german"}) == EUROPEAN == proof_model("auto", {"russian"})
    assert proof_model("auto", {"english", "japanese"}) == ANY == proof_model("auto", {"auto"})
    assert proof_model("auto", set()) == ANY


def test_the_token_limit_grows_with_the_text():
    assert limit_of(0) == LIMIT_EXTRA == 12
    assert limit_of(20) == 30 + 12 and limit_of(21) == 32 + 12  # half as many again, rounded up
    assert token_limit("") == 12
    assert 30 < token_limit("The quick brown fox jumps over the lazy dog.") < 60
    assert token_limit("我们明天去公园散步。") == (3 * (4 * 30 // 9) + 1) // 2 + 12  # 30 bytes: 2/3 a byte, + 12


def test_a_short_take_caps_the_limit_whatever_its_text_says():
    """A take cut short cannot hold its whole text, and a recognizer making words up on a second of babble stops
    after what a second of speech can hold (10 tokens), plus the extra: not after the whole sentence's share."""
    assert limit_of(100, seconds=1.0) == TOKENS_A_SECOND + LIMIT_EXTRA == 22
    assert limit_of(100, seconds=1.01) == 11 + 12  # a started second counts
    assert limit_of(4, seconds=30.0) == limit_of(4) == 6 + 12  # a long take of a short text: the text's limit
    assert token_limit("x" * 300, seconds=2.0) == 32 < token_limit("x" * 300)
