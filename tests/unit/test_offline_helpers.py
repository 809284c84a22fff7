"""Offline (HF_HUB_OFFLINE), a proof pass or word timings whose model the hub cache lacks is refused
when the job is submitted, naming the offline recipe (a random-weight checkpoint of that kind),
and nothing is enqueued; a local model directory is taken."""

from __future__ import annotations

import json

import pytest
from helpers.books import book
from helpers.procs import narrate


@pytest.mark.parametrize(("option", "kind"), [("--proof", "parakeet"), ("--word-timings", "aligner")])
def test_offline_a_helper_model_the_cache_lacks_is_refused_at_submit(env, home, voice_wav, tmp_path, option, kind):
    e = dict(env, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    doc = home / "book.txt"
    doc.write_text(book(3))
    ran = narrate(e, "submit", str(doc), "--voice", str(voice_wav), option)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    err = ran.stderr.strip()
    assert "HF_HUB_OFFLINE is set" in err and "not in the hub cache" in err, err
    assert f"random_checkpoint DIR --kind {kind}" in err and f"then {option} DIR" in err, err
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert json.loads(narrate(e, "info", "--json").stdout)["queues"][1]["queued"] == 0  # nothing enqueued


def test_offline_a_local_helper_directory_is_taken(env, home, voice_wav, tmp_path):
    e = dict(env, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    local = tmp_path / "asr"
    local.mkdir()
    (local / "config.json").write_text("{}")
    doc = home / "book.txt"
    doc.write_text(book(3))
    ran = narrate(e, "submit", str(doc), "--voice", str(voice_wav), "--proof", str(local))
    assert ran.returncode == 0, ran.stderr


def test_the_worker_names_the_offline_recipe_when_it_cannot_load_a_helper(tmp_path):
    """The worker's own check (its environment may be offline where the submitter's was not)."""
    import subprocess
    import sys

    code = (
        "from narrate.worker.engine.recognizer import MlxRecognizer, RecognizerUnavailable\n"
        "try:\n    MlxRecognizer.load('mlx-community/parakeet-tdt-0.6b-v2')\n"
        "except RecognizerUnavailable as e:\n    print(e)\n"
    )
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "PATH": "/usr/bin:/bin"}
    said = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120).stdout
    assert "HF_HUB_OFFLINE is set and it is not in the hub cache" in said, said
    assert "random_checkpoint DIR --kind parakeet, then --proof DIR" in said, said
