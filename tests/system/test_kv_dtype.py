"""Seed-000 regression: the voice embedding narrate injects is in the talker's dtype, and cloning
on a bf16 checkpoint keeps the prefill, both KV caches and the logits in bf16 while it runs."""

from __future__ import annotations

import mlx.core as mx
import pytest
from helpers.dtype_probe import DtypeProbe
from narrate.jobs.audio.voices import read_voice
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.server import store
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings
from narrate.worker.engine import voice_cache
from narrate.worker.engine.mlx_engine import MlxEngine
from narrate.worker.engine.models import load, resolve

SENTENCES = [Sentence(0, "Hello there, this is a test.", 1, 6), Sentence(1, "A second one.", 2, 6)]


@pytest.fixture(scope="module")
def loaded(checkpoint):
    return load(resolve(str(checkpoint), None))


def synthesize_probed(loaded, voice_wav, env, path: str) -> DtypeProbe:
    """Narrate's own path: voice cache (Redis) -> injected embedding -> engine, probed mid-stream."""
    settings = Settings.from_env()
    voice = read_voice(voice_wav, ffmpeg_exe())
    probe = DtypeProbe(loaded.model)
    try:
        with Connection(settings) as conn:
            store.put_voice(conn.redis, voice.sha256, voice.wav, 3600)
            emb, _ = voice_cache.voice_embedding(conn.redis, loaded, voice.sha256)
            engine = MlxEngine(loaded)
            chunks = engine.sequential(SENTENCES, emb) if path == "sequential" else engine.batched(SENTENCES, emb, 2)
            for _chunk in chunks:
                probe.check_live()
    finally:
        probe.remove()
    return probe


@pytest.mark.parametrize("path", ["sequential", "batched"])
def test_cached_embedding_keeps_prefill_kv_and_logits_in_bf16(loaded, voice_wav, env, path):
    assert loaded.talker_dtype == mx.bfloat16
    probe = synthesize_probed(loaded, voice_wav, env, path)
    assert probe.checks >= len(SENTENCES)
    assert probe.problems("bfloat16") == []


@pytest.mark.parametrize("path", ["sequential", "batched"])
def test_probe_fails_when_a_float32_embedding_reaches_the_prefill(loaded, voice_wav, env, monkeypatch, path):
    """The check above can fail: without narrate's cast, a float32 x-vector reaches the prefill
    builder (mlx-audio >= 0.4.8 would cast it again inside, so the KV cache alone cannot tell)."""
    monkeypatch.setattr(voice_cache, "cast_to_talker", lambda emb, _loaded: emb.astype(mx.float32))
    probe = synthesize_probed(loaded, voice_wav, env, path)
    assert any(p.startswith("embedding: ['float32']") for p in probe.problems("bfloat16"))
