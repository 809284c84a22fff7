"""Word timings without a worker (jobs/readalong/aligning.py): what an aligner gave is used or refused with a reason,
the record a checkpoint keeps names its aligner and its take (and survives the proof pass's rewrite of the header),
`--word-timings` is checked where it is given and left out of a spec that does not ask, a word whose clip would be
shorter than a millisecond gets no par, and the fake aligner splits words as mlx-audio's does."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from narrate.jobs.api.options import Options
from narrate.jobs.book.checkpoints import CheckpointStore, checkpoint_key
from narrate.jobs.book.spec import BadSpec, JobSpec
from narrate.jobs.errors import BadInput
from narrate.jobs.readalong.aligning import align_model, check_aligner, check_words, from_record, language_name, record
from narrate.jobs.readalong.smil import overlay
from narrate.jobs.readalong.timing import Clip, placed
from narrate.jobs.readalong.xhtml_pages import Page, mark, parse_xhtml
from narrate.worker.testkit.fake_aligner import FakeAligner, words_of

GOOD = [("The", 0.0, 0.2), ("sea", 0.25, 0.5), ("was", 0.5, 0.7), ("loud", 0.8, 1.1)]


def test_usable_words_and_why_others_are_not():
    assert check_words(GOOD, 1.2) is None
    assert check_words(GOOD, 1.0) is None  # a little past the end: an 80 ms class, rounding
    assert check_words([], 1.0) == "no words"
    assert check_words(GOOD, 0.5).startswith("a time past the end of the take (1.10 s of 0.50 s)")
    assert check_words([("a", 0.3, 0.2)], 1.0) == "a word that ends before it starts ('a')"
    assert check_words([("a", float("nan"), 0.2)], 1.0) == "a time that is not a number"
    assert check_words([("a", 0.5, 0.6), ("b", 0.2, 0.3)], 1.0) == "words out of order"
    assert check_words([("a", 0.16, 0.16), ("b", 0.16, 0.16), ("c", 0.16, 0.16)], 1.0) == "every word at one instant"
    assert check_words([("a", 0.16, 0.16)], 1.0) is None  # one word at an instant: still where it is


def test_the_record_names_its_aligner_and_its_take():
    kept = record("org/aligner", "ab" * 32, GOOD, None)
    assert from_record(kept, "org/aligner", "ab" * 32) == GOOD
    assert from_record(kept, "org/other", "ab" * 32) is None  # another aligner's words: aligned again
    assert from_record(kept, "org/aligner", "cd" * 32) is None  # another take's
    refused = record("org/aligner", "ab" * 32, GOOD, "no words")
    assert refused["why"] == "no words" and from_record(refused, "org/aligner", "ab" * 32) == []  # not again
    assert (
        from_record({"model": "org/aligner", "take": "ab" * 32, "words": [["x", 1]]}, "org/aligner", "ab" * 32) is None
    )
    assert from_record(None, "org/aligner", "ab" * 32) is None


def test_words_stay_in_the_checkpoint_through_the_proof_record(tmp_path):
    store = CheckpointStore(tmp_path)
    key = checkpoint_key("The sea was loud.", "v", "m", "bf16", 1, 10)
    pcm = np.linspace(-0.5, 0.5, 24_000, dtype=np.float32)
    store.save(key, pcm, frames=12, runaway=False, takes=1)
    cp = store.load(key)
    assert cp is not None and cp.words is None
    sha = hashlib.sha256(cp.pcm.tobytes()).hexdigest()
    assert sha == store.header(key)["sha256"]
    assert not store.record_words(key, record("m", "0" * 64, GOOD, None), "0" * 64)  # another take: not kept
    assert store.record_words(key, record("m", sha, GOOD, None), sha)
    store.record_proof(key, {"model": "asr", "final": True, "takes": []})
    again = store.load(key)
    assert again is not None and again.proof == {"model": "asr", "final": True, "takes": []}
    assert from_record(again.words, "m", sha) == GOOD  # the same take: its words kept
    assert store.record_words(key, record("m", sha, [], "no words"), sha)
    assert store.load(key).proof is not None  # the proof record kept in turn
    assert not store.record_words(checkpoint_key("gone", "v", "m", "bf16", 1, 10), {}, sha)


def test_the_option_is_checked_and_left_out_of_a_spec_that_does_not_ask(tmp_path):
    assert check_aligner(None) is None and check_aligner(" Auto ") == "auto"
    assert check_aligner("mlx-community/Qwen3-ForcedAligner-0.6B-8bit") == "mlx-community/Qwen3-ForcedAligner-0.6B-8bit"
    (tmp_path / "config.json").write_text("{}")
    assert check_aligner(str(tmp_path)) == str(tmp_path)
    with pytest.raises(BadInput, match=r"aligner .* has no config.json"):
        check_aligner(str(tmp_path.parent))
    with pytest.raises(BadInput, match="--word-timings takes the word after it"):
        check_aligner("book.txt")
    assert align_model("auto", "org/default") == "org/default" and align_model("org/x", "org/default") == "org/x"
    assert Options.make(word_timings="auto").word_timings == "auto"
    with pytest.raises(BadInput, match="--word-timings"):
        Options.make(word_timings="nothing here")
    opts = Options.make(word_timings=str(tmp_path))
    assert Options.from_json(opts.to_json()).word_timings == str(tmp_path)
    assert "word_timings" not in Options.make().to_json()
    plain = JobSpec(document="d", voice="a" * 64, output="b.m4b")
    assert "word_timings" not in plain.to_json()  # the same spec (and job id) as before word timings
    asked = JobSpec(document="d", voice="a" * 64, output="b.m4b", word_timings="auto")
    assert JobSpec.from_json(asked.to_json()).word_timings == "auto"
    with pytest.raises(BadSpec, match="word_timings"):
        JobSpec.from_json({**plain.to_json(), "word_timings": "not an aligner"})


def test_the_aligner_is_told_how_to_split_words():
    assert language_name("chinese") == "Chinese" and language_name("Japanese") == "Japanese"
    assert language_name("english") == language_name("auto") == language_name("german") == "English"


def test_a_word_shorter_than_a_millisecond_has_no_par():
    raw = b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head>'
    raw += b"<body><p>The sea was loud.</p></body></html>"
    page = Page("p.xhtml", parse_xhtml(raw, "p.xhtml"))
    words = [("The", 0.0, 0.1), ("sea", 0.3, 0.3), ("was", 0.3, 0.5), ("loud", 0.6, 0.9)]
    mark([page], ["The sea was loud."], {0: [w for w, _, _ in words]})
    clip = Clip(0, 2.0, 3.0)
    body, seconds = overlay(page, "o.smil", "a.mp3", {0: clip}, {0: placed(clip, words)})
    text = body.decode()
    assert "nr-s0-w1" in text and "nr-s0-w2" not in text and "nr-s0-w3" in text and seconds == 1.0
    assert 'clipBegin="0:00:02.300" clipEnd="0:00:02.600"' in text  # "was" from where "sea" would have started
    flat = [("The", 0.5, 0.5), ("sea", 1.0, 1.0)]  # every later word at the clip's end: the first takes it all
    body, _ = overlay(page, "o.smil", "a.mp3", {0: Clip(0, 2.0, 2.5)}, {0: placed(Clip(0, 2.0, 2.5), flat)})
    assert body.decode().count("<par ") == 1 and 'clipBegin="0:00:02.000" clipEnd="0:00:02.500"' in body.decode()


def test_the_fake_aligner_splits_words_as_mlx_audio_does():
    assert words_of("Hello, big world! It's 42 o'clock -- yes.") == [
        "Hello",
        "big",
        "world",
        "It's",
        "42",
        "o'clock",
        "yes",
    ]
    [got] = FakeAligner().align([np.zeros(24_000, np.float32)], texts=["The sea, loud."], languages=["english"])
    assert [w for w, _, _ in got] == ["The", "sea", "loud"] and check_words(got, 1.0) is None
