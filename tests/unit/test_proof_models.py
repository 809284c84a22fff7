"""Which recognizer a job's proof pass uses (jobs/proof/hearing.py), and how many tokens a take may cost it."""

from __future__ import annotations

from narrate.jobs.proof.hearing import ANY, ENGLISH, EUROPEAN, proof_model, token_limit


def test_a_named_recognizer_wins():
    assert proof_model("/models/my-asr", {"english"}, configured="org/other") == "/models/my-asr"


def test_auto_takes_the_workers_setting_then_goes_by_language():
    assert proof_model("auto", {"english"}, configured="org/asr") == "org/asr"
    assert proof_model("default", {"english"}) == ENGLISH
    assert proof_model("auto", {"english", "german"}) == EUROPEAN == proof_model("auto", {"russian"})
    assert proof_model("auto", {"english", "japanese"}) == ANY == proof_model("auto", {"auto"})
    assert proof_model("auto", set()) == ANY


def test_the_token_limit_grows_with_the_text():
    assert token_limit("") == 24
    assert 30 < token_limit("The quick brown fox jumps over the lazy dog.") < 60
    assert token_limit("我们明天去公园散步。") == 24 + 2 * 30 // 3
