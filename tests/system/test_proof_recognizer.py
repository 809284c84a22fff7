"""The proof pass's recognizer (worker/engine/recognizer.py) on the tiny random-weight Qwen3-ASR checkpoint
(worker/testkit/random_checkpoint/asr.py): loaded by mlx-audio's own STT loader from the published layout, it
transcribes batches of 24 kHz takes with the real mlx-audio code (garbage, from random weights)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest


def takes(*seconds: float) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [(0.1 * rng.standard_normal(int(24_000 * s))).astype(np.float32) for s in seconds]


def test_the_checkpoint_has_the_published_layout(asr_checkpoint):
    config = json.loads((asr_checkpoint / "config.json").read_text())
    assert config["model_type"] == "qwen3_asr" and set(config["thinker_config"]) >= {"audio_config", "text_config"}
    import mlx.core as mx

    weights = mx.load(str(asr_checkpoint / "model.safetensors"))
    assert weights and all(n.startswith("thinker.") for n in weights)
    assert weights["thinker.audio_tower.conv2d1.weight"].shape[:2] == (16, 1)  # PyTorch's Conv2d: out, in, h, w
    for name in ("tokenizer.json", "tokenizer_config.json", "preprocessor_config.json"):
        assert (asr_checkpoint / name).exists()


def test_it_loads_through_mlx_audios_loader_and_transcribes_a_batch(asr_checkpoint, monkeypatch):
    import mlx_audio.stt.utils as stt_utils
    from narrate.worker.engine.recognizer import MlxRecognizer

    calls = []
    real = stt_utils.base_load_model

    def spy(*args, **kwargs):
        calls.append((str(kwargs.get("model_path", args[0] if args else "")), kwargs.get("category")))
        return real(*args, **kwargs)

    monkeypatch.setattr(stt_utils, "base_load_model", spy)
    r = MlxRecognizer.load(str(asr_checkpoint))
    assert calls == [(str(asr_checkpoint.resolve()), "stt")] and r.family == "qwen3_asr" and r.sample_rate == 16_000
    heard = r.transcribe(takes(1.0, 2.6, 0.4, 1.8, 0.05), ["english", "english", "auto", "german", "english"], [8] * 5)
    assert len(heard) == 5 and all(isinstance(t, str) for t in heard) and heard[4] == ""  # too short to hear
    assert r.transcribe([], [], []) == []


def test_what_is_no_recognizer_is_refused_with_a_reason(checkpoint, tmp_path):
    from narrate.worker.engine.recognizer import MlxRecognizer, RecognizerUnavailable

    with pytest.raises(RecognizerUnavailable, match="not a speech recognizer mlx-audio knows"):
        MlxRecognizer.load(str(checkpoint))  # a Qwen3-TTS checkpoint
    with pytest.raises(RecognizerUnavailable, match="no config.json"):
        MlxRecognizer.load(str(tmp_path))
    with pytest.raises(RecognizerUnavailable, match="neither a local directory nor a Hugging Face id"):
        MlxRecognizer.load(str(tmp_path / "missing"))


def test_a_process_that_transcribed_exits_cleanly(asr_checkpoint):
    """MLX's per-thread cache of compiled functions aborted a process whose transcribing thread ended while Python
    was finalizing (exit 134, most runs): the recognizer's thread is a daemon that never ends."""
    code = (
        "import sys, numpy as np\n"
        "from narrate.worker.engine.recognizer import MlxRecognizer\n"
        "r = MlxRecognizer.load(sys.argv[1])\n"
        "a = (0.1 * np.random.default_rng(0).standard_normal(48000)).astype(np.float32)\n"
        "for _ in range(2): r.transcribe([a, a[:24000]], ['english'] * 2, [10, 10])\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(asr_checkpoint)], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-500:]
