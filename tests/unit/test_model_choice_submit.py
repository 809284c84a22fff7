"""A local --model path that this host can see is missing or not a checkpoint is refused at submit;
hub ids and real checkpoints pass, a relative path is made absolute; checking a model loads no
mlx."""

from __future__ import annotations

import json

import pytest
from helpers.cli import invoke
from narrate.jobs.errors import BadInput

DEFAULT_HUB_ID = "mlx-community/Qwen3-TTS-12Hz-1.7B-Base"


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("/no/such/checkpoint", "does not exist"),
        ("./missing-ckpt", "does not exist"),
        ("~/no-such-narrate-checkpoint", "does not exist"),
        ("{home}/empty", "has no config.json"),
        ("{home}/doc.txt", "is not a directory"),
    ],
)
def test_a_missing_local_model_is_refused_at_submit(env, home, voice_wav, external_redis, model, why):
    (home / "empty").mkdir()
    doc = home / "doc.txt"
    doc.write_text("One sentence.")
    model = model.format(home=home)
    proc = invoke(
        env,
        "submit",
        str(doc),
        "--voice",
        str(voice_wav),
        "-o",
        str(home / "out" / "d.mp3"),
        "--model",
        model,
        cwd=home,
    )
    err = proc.stderr.strip()
    assert proc.returncode == 1 and len(err.splitlines()) == 1 and err.startswith("Error: model "), err
    assert why in err and "--model" in err, err
    assert external_redis.dbsize() == 0  # nothing stored, nothing enqueued


def test_hub_ids_and_real_checkpoints_pass_at_submit(env, home, voice_wav, checkpoint, external_redis):
    doc = home / "doc.txt"
    doc.write_text("One sentence.")
    for i, model in enumerate([DEFAULT_HUB_ID, "Qwen/Qwen3-TTS-12Hz-0.6B-Base", str(checkpoint)]):
        proc = invoke(
            env,
            "submit",
            str(doc),
            "--voice",
            str(voice_wav),
            "-o",
            str(home / "out" / f"{i}.mp3"),
            "--model",
            model,
            "--json",
        )
        assert proc.returncode == 0, (model, proc.stderr)


def test_a_relative_checkpoint_path_is_made_absolute_for_the_worker(env, home, voice_wav, checkpoint, external_redis):
    """The worker runs in its own directory: a relative path is resolved where it was typed."""
    (home / "models").mkdir()
    (home / "models" / "tiny").symlink_to(checkpoint)
    doc = home / "doc.txt"
    doc.write_text("One sentence.")
    proc = invoke(
        env,
        "submit",
        str(doc),
        "--voice",
        str(voice_wav),
        "-o",
        str(home / "out" / "d.mp3"),
        "--model",
        "models/tiny",
        "--json",
        cwd=home,
    )
    assert proc.returncode == 0, proc.stderr
    from narrate.jobs.server.records import fetch

    spec = fetch(external_redis, json.loads(proc.stdout)["id"]).args[0]
    assert spec["model"] == str(home / "models" / "tiny"), spec


def test_check_model_imports_no_mlx():
    import subprocess
    import sys

    code = (
        "import sys; from narrate.jobs.api.model_choice import check_model; check_model('org/name');"
        "assert not any(m == 'mlx' or m.startswith(('mlx.', 'narrate.worker')) for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    from narrate.jobs.api.model_choice import check_model

    with pytest.raises(BadInput, match="does not exist"):
        check_model("/no/such/dir")
