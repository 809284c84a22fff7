"""Voice embeddings: computed once per (voice sha256, model weights), cast to the talker's
embedding dtype, persisted in Redis by dtype (shared by hosts, survives restarts), injected on every
sentence. On a hit the speaker encoder does not run; narrate runs it only in ``speaker_embedding``
(a miss here, or the benchmark's one run per voice), which counts the runs (``SpeakerEncoderRuns``).

The cast is narrate's own: a float32 x-vector concatenated into a bf16 prefill promotes the
prefill and the whole KV cache to float32 (~2.4x slower). mlx-audio >= 0.4.8 casts too, but
every prefill narrate builds itself relies on this one.
"""

from __future__ import annotations

import threading
from typing import Any, cast

import mlx.core as mx
import numpy as np
import redis
from narrate.jobs.audio.samples import voice_samples
from narrate.jobs.server import store
from narrate.worker.engine.models import LoadedModel
from redis.typing import EncodableT, FieldT

EMBEDDING_KEEP_S = 90 * 24 * 3600  # an embedding unused this long expires (a few KB each; recomputed on demand)


def cast_to_talker(embedding: mx.array, loaded: LoadedModel) -> mx.array:
    return embedding.astype(loaded.talker_dtype)


def encode(embedding: mx.array) -> dict[FieldT, EncodableT]:
    dtype = str(embedding.dtype).removeprefix("mlx.core.")
    if embedding.dtype == mx.bfloat16:  # numpy has no bfloat16: store the bits
        data = np.array(mx.view(embedding, mx.uint16)).tobytes()
    else:
        data = np.array(embedding).tobytes()
    return {"data": data, "dtype": dtype, "shape": ",".join(map(str, embedding.shape))}


def decode(fields: dict[bytes, bytes]) -> mx.array:
    dtype = fields[b"dtype"].decode()
    shape = tuple(int(x) for x in fields[b"shape"].decode().split(","))
    raw = fields[b"data"]
    if dtype == "bfloat16":
        return mx.view(mx.array(np.frombuffer(raw, np.uint16).reshape(shape)), mx.bfloat16)
    return mx.array(np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape))


class SpeakerEncoderRuns:
    """How many times this process ran the speaker encoder for narrate (``speaker_embedding``; the
    benchmark adds mlx-audio's own runs while it measures mlx-audio's loops)."""

    count = 0
    _lock = threading.Lock()

    @classmethod
    def add(cls, n: int = 1) -> None:
        with cls._lock:
            cls.count += n


def speaker_embedding(loaded: LoadedModel, samples: mx.array) -> mx.array:
    """Run the speaker encoder on a voice's 24 kHz samples: its embedding in the talker's dtype."""
    model: Any = loaded.model  # mlx-audio's Qwen3-TTS Model (untyped)
    # The class method: the instance attribute may be narrate's injection of another voice.
    emb = cast_to_talker(type(model).extract_speaker_embedding(model, samples), loaded)
    mx.eval(emb)
    SpeakerEncoderRuns.add()
    return emb


def voice_embedding(r: redis.Redis, loaded: LoadedModel, voice_sha: str) -> tuple[mx.array, bool]:
    """(embedding in the talker's dtype, cache hit?)"""
    # A float32 talker's (--quant float32) kept apart from the bf16 one of the same weights.
    key = store.embedding_key(voice_sha, loaded.key if loaded.talker_dtype == mx.bfloat16 else f"{loaded.key}+float32")
    fields = cast("dict[bytes, bytes]", r.hgetall(key))  # narrate's clients return bytes (decode_responses off)
    if fields:
        emb = decode(fields)
        if emb.dtype == loaded.talker_dtype:
            r.expire(key, EMBEDDING_KEEP_S)  # kept while the voice is in use
            return emb, True
    emb = speaker_embedding(loaded, mx.array(voice_samples(store.get_voice(r, voice_sha))))
    with r.pipeline() as p:
        p.hset(key, mapping=encode(emb))
        p.expire(key, EMBEDDING_KEEP_S)
        p.execute()
    return emb, False
