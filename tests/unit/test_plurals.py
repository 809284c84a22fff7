"""Counts in what the commands print agree with their nouns: "1 candidate", "1 chapter, 1 sentence",
"1 voice", never "1 candidates"."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import invoke
from helpers.fake import fake_env
from narrate.jobs.counts import count


def test_count_picks_the_noun_that_agrees():
    assert [count(n, "candidate") for n in (0, 1, 2)] == ["0 candidates", "1 candidate", "2 candidates"]
    assert count(1, "entry", "entries") == "1 entry" and count(3, "entry", "entries") == "3 entries"


def test_voice_design_of_one_candidate_says_one_candidate(external_redis, env, home, tmp_path):
    env = fake_env(env, home)
    model = tmp_path / "vd"
    model.mkdir()
    config = {"tts_model_type": "voice_design", "tts_model_size": "1b7", "talker_config": {"spk_id": {}}}
    (model / "config.json").write_text(json.dumps(config))
    ran = invoke(
        env, "voice", "design", "old", "Female, 60s, raspy", "--candidates", "1", "--model", str(model), "--no-wait"
    )
    assert ran.returncode == 0, ran.stderr
    assert "designing old: 1 candidate in job " in ran.stderr, ran.stderr


def test_chapters_and_cast_of_a_one_sentence_book_say_one(env, home):
    doc = home / "one.txt"
    doc.write_text("[alice] Only this.\n")
    ran = invoke(env, "chapters", str(doc))
    assert ran.returncode == 0, ran.stderr
    assert ": 1 chapter, 1 sentence, about " in ran.stdout.splitlines()[0], ran.stdout
    assert "(1 sentence, " in ran.stdout.splitlines()[1], ran.stdout
    ran = invoke(env, "cast", str(doc), "--voice", "alice=ryan")
    assert ran.returncode == 0, ran.stderr
    assert ": 1 voice, 1 sentence, about " in ran.stdout.splitlines()[0], ran.stdout


def test_a_fanned_out_books_last_sentence_is_one_sentence():
    from narrate.jobs.documents.documents import Document
    from narrate.jobs.fanout.split import within_cap

    doc = Document("b", [["A first sentence here, long enough to weigh something."], ["Last one."]])
    from narrate.jobs.documents.budgets import speaking_seconds

    first = len(doc.paragraphs[0])
    cap = speaking_seconds(doc.sentences[0]) * 24_000 * 2 / 1e6 + 0.001  # the first part fits, not the second
    kept, warning = within_cap(doc, [(0, first), (first, first + 1)], cap_mb=cap)
    assert kept == [(0, first)] and warning is not None
    assert "the last 1 sentence is synthesized by the book's own job" in warning, warning


def test_voice_design_candidates_go_under_the_output_root(external_redis, env, home, tmp_path):
    """Not into whatever folder the command was run from."""
    from helpers.procs import narrate

    env = fake_env(env, home)
    model = tmp_path / "vd"
    model.mkdir()
    config = {"tts_model_type": "voice_design", "tts_model_size": "1b7", "talker_config": {"spk_id": {}}}
    (model / "config.json").write_text(json.dumps(config))
    args = ["voice", "design", "old", "Female, 60s, raspy", "--candidates", "2", "--model", str(model)]
    assert invoke(env, *args, "--no-wait").returncode == 0
    assert narrate(env, "worker", "--burst", "--quiet").returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ran = narrate(env, *args, cwd=elsewhere)
    assert ran.returncode == 0, ran.stderr
    written = [Path(p) for p in ran.stdout.split()]
    assert written == [home / "out" / "old-candidates" / f"old-{n}.wav" for n in (1, 2)], written
    assert all(p.stat().st_size > 44 for p in written) and not list(elsewhere.iterdir())
