"""narrate's side of the parity comparison: the same computations as reference_side.py, through the
code narrate synthesizes with (its model loader, streaming codec, decode loop and speaker path)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

FIRST_CHUNK, LATER_CHUNK = 4, 24  # as the decode loop sends a row's frames to the codec


def load(checkpoint: Path) -> Any:
    """The float32 checkpoint as narrate loads it for ``--quant float32`` (the reference's dtype on a CPU)."""
    from narrate.worker.engine.models import load, resolve

    return load(resolve(str(checkpoint), "float32"))


def pieces(codes: np.ndarray) -> Iterator[np.ndarray]:
    """The frames in the decode loop's chunks: 4, then 24 at a time."""
    start, size = 0, FIRST_CHUNK
    while start < len(codes):
        yield codes[start : start + size]
        start, size = start + size, LATER_CHUNK


def stream_codec(loaded: Any, codes: np.ndarray, route: str = "narrate") -> np.ndarray:
    """Samples of `codes` ((frames, 16)) streamed as narrate's decode loop streams a row.

    route: ``narrate`` (what this device runs: on a CPU with codec_fast's layers), ``plain`` (the decoder's own
    layers with the window: a GPU's route), ``unwindowed`` (mlx-audio 0.6.2's decoder as it is: no window)."""
    from narrate.worker.engine.codec_stream import CodecWorker, RowCodec
    from narrate.worker.engine.codec_window import windowed

    worker = CodecWorker(loaded.model.speech_tokenizer.decoder, threaded=False)
    if route == "narrate":
        row = worker.row()
    elif route == "plain":
        row = RowCodec(worker.decoder, worker.slots, windowed(worker.decoder))
    elif route == "unwindowed":
        row = RowCodec(worker.decoder, worker.slots, [])
    else:
        raise ValueError(route)
    out = [row.decode(list(piece)) for piece in pieces(np.asarray(codes))]
    return np.concatenate(out)


@contextlib.contextmanager
def greedy(model: Any, repetition_penalty: float) -> Iterator[None]:
    """The model's sampling set to greedy (the reference's do_sample=False, subtalker_dosample=False)."""
    saved = model.generate_config
    model.generate_config = {"temperature": 0.0, "subtalker_temperature": 0.0, "repetition_penalty": repetition_penalty}
    try:
        yield
    finally:
        model.generate_config = saved


def greedy_codes(
    loaded: Any, xvector: np.ndarray, texts: Sequence[str], frames: int, repetition_penalty: float
) -> list[np.ndarray]:
    """Each text's codes ((frames, 16)) from narrate's decode loop, all texts as rows of one batch, greedy,
    cloned in x-vector mode with `xvector` (the reference's own, so that only the talker is compared)."""
    import mlx.core as mx
    from narrate.worker.engine.decode_loop import DecodeLoop, Row
    from narrate.worker.engine.row_voices import RowVoice

    voice = RowVoice.clone(mx.array(xvector).astype(loaded.talker_dtype))
    with greedy(loaded.model, repetition_penalty):
        loop = DecodeLoop(loaded.model, size=max(len(texts), 1), threaded_codec=False)
        rows = [Row(index=i, seed=i, budget=frames, voice=voice, text=t, codes=[]) for i, t in enumerate(texts)]
        loop.add(rows)
        try:
            while loop.busy:
                for _ in loop.step():
                    pass
            list(loop.ready(wait=True))
        finally:
            loop.close()
    return [np.stack(r.codes or [np.zeros(16, np.int64)]).astype(np.int32)[: len(r.codes or [])] for r in rows]


def xvector(loaded: Any, audio: np.ndarray) -> np.ndarray:
    """The speaker embedding of 24 kHz `audio` as narrate computes a voice's (voice_cache.speaker_embedding)."""
    import mlx.core as mx
    from narrate.worker.engine.voice_cache import speaker_embedding

    emb = speaker_embedding(loaded, mx.array(audio))
    return np.array(emb.astype(mx.float32)).reshape(-1)
