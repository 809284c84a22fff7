"""The proof pass's recognizer (worker/engine/recognizer.py) on the tiny random-weight Qwen3-ASR checkpoint
(worker/testkit/random_checkpoint/asr.py): loaded by mlx-audio's own STT loader from the published layout, it
transcribes batches of 24 kHz takes with the real mlx-audio code (garbage, from random weights)."""

from __future__ import annotations

import json

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
    heard = r.transcribe(
        takes(1.0, 2.6, 0.4, 1.8, 0.05),
        languages=["english", "english", "auto", "german", "english"],
        texts=["One two.", "Three four five.", "Six.", "Sieben acht.", "Nine."],
    )
    assert len(heard) == 5 and all(isinstance(t, str) for t in heard) and heard[4] == ""  # too short to hear
    assert r.transcribe([], languages=[], texts=[]) == []


def _tokens(r, text: str) -> list[int]:
    return r.model._tokenizer.encode(text, add_special_tokens=False)


def test_the_batched_decode_is_mlx_audios_with_a_limit_per_take(asr_checkpoint):
    """narrate's Qwen3-ASR decode (decode_qwen3_asr) against mlx-audio's own batched decode: with one limit for
    every take (mlx-audio's budget for the batch is their sum, so each random-weight take, which never ends, gets
    its share) the transcripts are the same; with a limit each, every take stops at its own (mlx-audio's would
    let one take spend the others' share), and the batch that shrinks as takes stop keeps the rest the same."""
    from mlx_audio.lm.sample_utils import make_sampler
    from narrate.worker.engine.recognizer import SHRINK, MlxRecognizer, RecognizerThread, decode_qwen3_asr

    r = MlxRecognizer.load(str(asr_checkpoint))
    audio = [a[::3].copy() for a in takes(1.0, 2.6, 0.4, 1.8, 1.2)]  # (their rate does not matter to a decode)

    def theirs(limit: int) -> list[str]:
        texts, *_ = r.model._generate_chunks_batched(
            [(a, 0.0) for a in audio],
            max_tokens=limit * len(audio),
            sampler=make_sampler(0.0),
            logits_processors=None,
            language="English",
            system_prompt=None,
            batch_size=len(audio),
            verbose=False,
        )
        return texts

    def ours(limits: list[int]) -> list[str]:
        return decode_qwen3_asr(r.model, audio, limits, "English")

    assert RecognizerThread.run(ours, [30] * 5) == RecognizerThread.run(theirs, 30)
    limits = [5, 30, 12, 2, 20]  # the batch shrinks to the rows still going twice (SHRINK of them at most)
    assert sum(n > 12 for n in limits) <= SHRINK * len(limits)
    mine, long = RecognizerThread.run(ours, limits), RecognizerThread.run(ours, [30] * 5)
    for text, limit, full in zip(mine, limits, long, strict=True):
        assert len(_tokens(r, text)) == limit and _tokens(r, full)[:limit] == _tokens(r, text)


def test_a_take_is_heard_up_to_its_limit(asr_checkpoint):
    """The tiny recognizer's random weights never end a transcript: each runs to its limit, the text's tokens half
    as many again (+12), capped by the take's length (10 tokens a second, +12)."""
    from narrate.jobs.proof.recognizer_choice import limit_of
    from narrate.worker.engine.recognizer import MlxRecognizer

    r = MlxRecognizer.load(str(asr_checkpoint))
    short, long = "Hello there.", " ".join(["A long sentence that goes on and on."] * 6)
    heard = r.transcribe(takes(3.0, 1.0, 3.0), languages=["english"] * 3, texts=[short, long, long])
    assert [len(_tokens(r, t)) for t in heard] == [limit_of(len(_tokens(r, short))), 22, 42]


def test_a_parakeet_recognizer_hears_take_by_take(parakeet_checkpoint):
    """The tiny Parakeet TDT checkpoint (the family of the default English recognizer) in the published layout,
    loaded by mlx-audio's STT loader from a directory of any name: each take is heard through the model's public
    ``generate`` (the same text as calling it directly), as its vocabulary's word pieces (garbage), a take too short
    as nothing."""
    import shutil

    import mlx.core as mx
    from mlx_audio.utils import resample_audio
    from narrate.worker.engine.recognizer import MlxRecognizer, RecognizerThread
    from narrate.worker.testkit.random_checkpoint.parakeet import VOCABULARY

    elsewhere = shutil.copytree(parakeet_checkpoint, parakeet_checkpoint.parent / "my-recognizer", dirs_exist_ok=True)
    r = MlxRecognizer.load(str(elsewhere))
    assert r.family == "parakeet" and r.sample_rate == 16_000
    audio = takes(1.5, 0.05, 3.0)
    heard = r.transcribe(audio, languages=["english"] * 3, texts=["One two three.", "Four.", "Five six seven."])

    def directly() -> list[str]:
        return [
            r.model.generate(mx.array(resample_audio(a, 24_000, 16_000, axis=0))).text.strip()
            for a in (audio[0], audio[2])
        ]

    assert heard[1] == "" and [heard[0], heard[2]] == RecognizerThread.run(directly) and any(heard)
    words = tuple(piece[1:] for piece in VOCABULARY if piece.startswith("\u2581"))
    assert all(w.startswith(words) for w in " ".join(heard).split())


def test_what_is_no_recognizer_is_refused_with_a_reason(checkpoint, tmp_path):
    from narrate.worker.engine.recognizer import MlxRecognizer, RecognizerUnavailable

    with pytest.raises(RecognizerUnavailable, match="not a speech recognizer mlx-audio knows"):
        MlxRecognizer.load(str(checkpoint))  # a Qwen3-TTS checkpoint
    with pytest.raises(RecognizerUnavailable, match="no config.json"):
        MlxRecognizer.load(str(tmp_path))
    with pytest.raises(RecognizerUnavailable, match="neither a local directory nor a Hugging Face id"):
        MlxRecognizer.load(str(tmp_path / "missing"))


def test_a_book_is_proofed_with_the_real_engine_and_recognizer(env, home, voice_wav, asr_checkpoint):
    """`narrate run --proof DIR` with the tiny Qwen3-TTS and Qwen3-ASR checkpoints: every take is heard (garbage,
    so flagged), synthesized again once in the job's voice with a new seed, and the book is written. The process
    exits 0: MLX's per-thread cache of compiled functions aborted a process whose transcribing thread ended while
    Python was finalizing (exit 134, most runs), so the recognizer's thread is a daemon that never ends."""
    from helpers.procs import narrate

    doc = home / "story.txt"
    doc.write_text("Once upon a time there was a test. It ran on a CPU.\n\nAnd it was heard back.")
    out = home / "out" / "story.wav"
    proc = narrate(
        env,
        "run",
        str(doc),
        "--voice",
        str(voice_wav),
        "-o",
        str(out),
        "--json",
        "--proof",
        str(asr_checkpoint),
        "--retakes",
        "1",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)["result"]
    proof = result["proof"]
    assert proof["model"] == str(asr_checkpoint) and out.stat().st_size > 44
    assert (proof["checked"], proof["flagged"], proof["retaken"], proof["still_flagged"], proof["retakes"]) == (3,) * 5
