"""The tiny checkpoint loaded for engine-level tests, and a voice for it (a noise sample's x-vector)."""

from __future__ import annotations

from pathlib import Path


def load_tiny(checkpoint: Path):
    from narrate.worker.engine.models import load, resolve

    return load(resolve(str(checkpoint), None))


def noise_embedding(loaded):
    """The x-vector of 2 s of seeded noise, in the talker's dtype."""
    import mlx.core as mx
    import numpy as np

    rng = np.random.default_rng(0)
    audio = mx.array((0.1 * rng.standard_normal(48_000)).astype(np.float32))
    return type(loaded.model).extract_speaker_embedding(loaded.model, audio).astype(loaded.talker_dtype)
