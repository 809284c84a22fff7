"""Choosing a model: a hub model that cannot be downloaded fails its job at once with what to do
(not three times with huggingface_hub's words), and a local --model path that this host can see
is missing or not a checkpoint is refused at submit."""

from __future__ import annotations

import time

from helpers.ops import job_meta, submit
from helpers.procs import narrate, wait_for_job

DEFAULT_HUB_ID = "mlx-community/Qwen3-TTS-12Hz-1.7B-Base"


def no_network(env: dict, home, offline_flag: bool) -> dict:
    """The default hub model, an empty hub cache, and a hub endpoint where nothing listens (or
    huggingface_hub's own offline switch): no request leaves this machine."""
    e = dict(env, HF_HOME=str(home / "hf"), HF_ENDPOINT="http://127.0.0.1:9", HF_HUB_DISABLE_TELEMETRY="1")
    e.pop("NARRATE_MODEL", None)
    e.pop("HF_HUB_OFFLINE", None)
    if offline_flag:
        e["HF_HUB_OFFLINE"] = "1"
    return e


def assert_says_what_to_do(error: str) -> None:
    assert "\n" not in error, error
    assert "Hugging Face hub" in error and DEFAULT_HUB_ID in error, error
    assert "--model DIR" in error and "python -m narrate.worker.testkit.random_checkpoint DIR --size tiny" in error
    assert "LocalEntryNotFoundError" not in error, error  # huggingface_hub's words are not the message


def test_a_hub_model_that_cannot_be_downloaded_fails_once_saying_what_to_do(env, home, voice_wav, external_redis):
    e = no_network(env, home, offline_flag=False)
    doc = home / "doc.txt"
    doc.write_text("One sentence to narrate.")
    job_id = submit(e, doc, voice_wav, home / "out" / "doc.mp3")
    proc = narrate(e, "worker", "--burst", timeout=120)
    st = wait_for_job(job_id, timeout=10)
    assert st["status"] == "failed", (st, proc.stderr[-2000:])
    assert_says_what_to_do(st["error"])
    assert "Connection refused" in st["error"], st["error"]  # the cause, in a few words
    assert st["error"].endswith("run the same command again once the network is back"), st["error"]
    assert job_meta(external_redis, job_id)["attempts"] == 1  # tried once: a retry cannot succeed
    assert proc.stderr.count("loading mlx-community/") == 1, proc.stderr[-3000:]
    assert f"job {job_id} failed: cannot download {DEFAULT_HUB_ID}" in proc.stderr  # the log says it in one line
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]  # an explained error, not a crash
    shown = narrate(e, "status", job_id)
    assert shown.returncode == 0 and "Hugging Face hub" in shown.stdout, shown


def test_the_first_command_offline_is_one_clear_line(env, home, voice_wav, tmp_path):
    e = no_network(env, home, offline_flag=True)
    t0 = time.monotonic()
    doc = tmp_path / "sample.txt"
    doc.write_text("One sentence to narrate. And another one.")
    proc = narrate(e, "run", str(doc), "--voice", str(voice_wav), "-o", "sample.mp3", timeout=120, cwd=tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr
    assert_says_what_to_do(errors[0])
    assert "HF_HUB_OFFLINE" in errors[0], errors[0]
    assert proc.stderr.count("HF_HUB_OFFLINE") == 1, proc.stderr  # not also as a log line of the worker
    assert time.monotonic() - t0 < 60
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample.txt"]  # no partial output


def test_an_offline_voice_design_names_the_random_checkpoint_of_its_kind(env, home, external_redis):
    """`voice design` offline: the hint builds a VoiceDesign checkpoint (--kind voice-design), which
    the design can use, not the Base one the default hint makes."""
    e = no_network(env, home, offline_flag=True)
    made = narrate(e, "voice", "design", "gran", "Female, 60s, low raspy alto", "--no-wait")
    assert made.returncode == 0, made.stderr
    job_id = made.stdout.strip().split()[-1]
    proc = narrate(e, "worker", "--burst", timeout=120)
    st = wait_for_job(job_id, timeout=10)
    assert st["status"] == "failed", (st, proc.stderr[-2000:])
    hint = "python -m narrate.worker.testkit.random_checkpoint DIR --size tiny --kind voice-design, then --model DIR"
    assert hint in st["error"] and "mlx-community/Qwen3-TTS-12Hz-1.7B-VoiceDesign" in st["error"], st["error"]
    from narrate.jobs.api.model_choice import random_weights

    assert "--kind" not in random_weights(DEFAULT_HUB_ID)  # a Base model's random weights need no --kind
    assert "--kind custom-voice" in random_weights("mlx-community/Qwen3-TTS-12Hz-1.7B-CustomVoice-bf16")
