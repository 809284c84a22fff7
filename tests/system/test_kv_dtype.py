"""Seed-000 regression: the voice narrate hands the prefill builder is in the talker's dtype, and
synthesis on a bf16 checkpoint keeps the prefill, both KV caches and the logits in bf16 while it
runs, on every path narrate has: a cloned sample on a Base model (its cached x-vector), a preset
speaker on a CustomVoice model (its codec embedding, with an instruction), a designed voice on a
VoiceDesign model; each through the job's call (``synthesize``) with its rows alone (a batch of
one: each sentence admitted when the last one leaves), sharing a continuous batch, and in a static
batch (the benchmark's reference). And with `--quant float32` everything in float32."""

from __future__ import annotations

import mlx.core as mx
import pytest
from helpers.dtype_probe import DtypeProbe
from narrate.jobs.audio.samples import read_voice
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.book.voice import VoiceRef
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.server import store
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings
from narrate.worker.engine import voice_cache
from narrate.worker.engine.mlx_engine import MlxEngine
from narrate.worker.engine.models import load, resolve

SENTENCES = [Sentence(0, "Hello there, this is a test.", 1, 6), Sentence(1, "A second one.", 2, 6)]
# Every synthesis path narrate has: (rows a batch, continuous) of narrate's decode loop.
PATHS = {"alone": (1, True), "batched": (2, True), "static": (2, False)}


@pytest.fixture(scope="module")
def loaded(checkpoint):
    return load(resolve(str(checkpoint), "bf16"))


@pytest.fixture(scope="module")
def loaded_float32(checkpoint):
    """`--quant float32`: the same weights, the talker and code predictor upcast at load."""
    return load(resolve(str(checkpoint), "float32"))


@pytest.fixture(scope="module")
def custom_voice(custom_voice_checkpoint):
    return load(resolve(str(custom_voice_checkpoint), "bf16"))


@pytest.fixture(scope="module")
def voice_design(voice_design_checkpoint):
    return load(resolve(str(voice_design_checkpoint), "bf16"))


def synthesize_probed(loaded, path: str, ref: VoiceRef, r=None) -> DtypeProbe:
    """Narrate's own path: the engine's voice (for a clone: the voice cache in Redis and the
    injected embedding) -> the job's synthesis on `path`, probed mid-stream."""
    probe = DtypeProbe(loaded.model)
    try:
        size, continuous = PATHS[path]
        engine = MlxEngine(loaded, batch_size=size, continuous=continuous)
        for _chunk in engine.synthesize(SENTENCES, engine.voice(r, ref)):
            probe.check_live()
    finally:
        probe.remove()
    return probe


def clone_probed(loaded, voice_wav, path: str) -> DtypeProbe:
    voice = read_voice(voice_wav, ffmpeg_exe())
    with Connection(Settings.from_env()) as conn:
        store.put_voice(conn.redis, voice.sha256, voice.wav, 3600)
        return synthesize_probed(loaded, path, VoiceRef.clone(voice.sha256), conn.redis)


@pytest.mark.parametrize("path", PATHS)
def test_cached_embedding_keeps_prefill_kv_and_logits_in_bf16(loaded, voice_wav, env, path):
    assert loaded.talker_dtype == mx.bfloat16
    probe = clone_probed(loaded, voice_wav, path)
    assert probe.checks >= len(SENTENCES)
    assert probe.problems("bfloat16") == []


@pytest.mark.parametrize("path", PATHS)
def test_probe_fails_when_a_float32_embedding_reaches_the_prefill(loaded, voice_wav, env, monkeypatch, path):
    """The check above can fail: without narrate's cast, a float32 x-vector reaches the prefill
    builder (mlx-audio >= 0.4.8 would cast it again inside, so the KV cache alone cannot tell)."""
    monkeypatch.setattr(voice_cache, "cast_to_talker", lambda emb, _loaded: emb.astype(mx.float32))
    probe = clone_probed(loaded, voice_wav, path)
    assert any(p.startswith("embedding: ['float32']") for p in probe.problems("bfloat16"))


@pytest.mark.parametrize("path", PATHS)
def test_a_preset_speaker_keeps_prefill_kv_and_logits_in_bf16(custom_voice, path):
    """The speaker's codec embedding (in the x-vector's place) and the instruction's text embedding."""
    assert custom_voice.talker_dtype == mx.bfloat16
    probe = synthesize_probed(custom_voice, path, VoiceRef.preset("ryan", "Calm and slow."))
    assert probe.checks >= len(SENTENCES)
    assert probe.problems("bfloat16") == []


@pytest.mark.parametrize("path", PATHS)
def test_a_designed_voice_keeps_prefill_kv_and_logits_in_bf16(voice_design, path):
    """A design has no speaker embedding at all: only its description leads the prefill."""
    assert voice_design.talker_dtype == mx.bfloat16
    probe = synthesize_probed(voice_design, path, VoiceRef.design("A deep, warm voice, unhurried."))
    assert probe.checks >= len(SENTENCES)
    assert probe.problems("bfloat16", unobserved=("embedding",)) == []
    assert probe.seen["embedding"] == set()


@pytest.mark.parametrize("path", PATHS)
def test_float32_keeps_prefill_kv_and_logits_in_float32(loaded_float32, voice_wav, env, path):
    """The rule holds on the float32 path too: the voice cast to the talker's dtype, so the prefill, both KV
    caches and the logits are all float32 (no bf16 left to mix in)."""
    assert loaded_float32.talker_dtype == mx.float32
    probe = clone_probed(loaded_float32, voice_wav, path)
    assert probe.checks >= len(SENTENCES)
    assert probe.problems("float32") == []


def test_float32_and_bf16_voices_are_cached_apart(loaded, loaded_float32, voice_wav, env):
    """The same weights' two dtypes keep their x-vectors under their own keys: neither evicts the other."""
    voice = read_voice(voice_wav, ffmpeg_exe())
    with Connection(Settings.from_env()) as conn:
        store.put_voice(conn.redis, voice.sha256, voice.wav, 3600)
        emb16, hit16 = voice_cache.voice_embedding(conn.redis, loaded, voice.sha256)
        emb32, hit32 = voice_cache.voice_embedding(conn.redis, loaded_float32, voice.sha256)
        assert (emb16.dtype, emb32.dtype, hit16, hit32) == (mx.bfloat16, mx.float32, False, False)
        again16, hit16 = voice_cache.voice_embedding(conn.redis, loaded, voice.sha256)
        again32, hit32 = voice_cache.voice_embedding(conn.redis, loaded_float32, voice.sha256)
        assert hit16 and hit32
        assert mx.array_equal(again16, emb16).item() and mx.array_equal(again32, emb32).item()
        assert mx.array_equal(emb32.astype(mx.bfloat16), emb16).item()  # one x-vector, cast to each dtype
