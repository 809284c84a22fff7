"""The compiled code-predictor step (code_predictor_step.py) and the codec's faster CPU layers
(codec_fast.py): same codes as the uncompiled loop, a row's codes independent of the bucket it
is padded into, buckets compiled once at warm-up; the faster layers equal to mlx's, swapped in
only while narrate decodes."""

from __future__ import annotations

import logging

import mlx.core as mx
import numpy as np
import pytest
from narrate.worker.engine import code_predictor_step as cps
from narrate.worker.engine.codec_fast import (
    DepthwiseConv1d,
    PatchConv1d,
    Settled,
    StridedTransposeConv1d,
    swaps_for,
)
from narrate.worker.engine.codec_stream import CodecWorker
from narrate.worker.engine.mlx_engine import MlxEngine
from narrate.worker.engine.models import load, resolve
from narrate.worker.engine.sampling import options


@pytest.fixture(scope="module")
def loaded(checkpoint):
    return load(resolve(str(checkpoint), None))


def inputs(loaded, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    hidden_size = loaded.model.config.talker_config.hidden_size
    hidden = mx.array(rng.standard_normal((n, 1, hidden_size)).astype(np.float32)).astype(loaded.talker_dtype)
    first = mx.array(rng.integers(0, 2048, n).astype(np.int32))
    seeds = mx.array(rng.integers(0, 2**31, n).astype(np.uint32))
    steps = mx.array(rng.integers(0, 500, n).astype(np.uint32))
    return hidden, first, seeds, steps


def test_compiled_codes_equal_the_uncompiled_loop_in_every_bucket(loaded, monkeypatch):
    """5 rows padded into a bucket of 8 (and of 5), each row also alone: the same codes as the
    op-by-op loop, so padded rows change nothing and compiling changed no result here."""
    model = loaded.model
    step = cps.code_predictor_step(model, options(model.generate_config)[1])
    monkeypatch.setattr(step, "every", False)  # powers of two, as on a GPU: 5 rows padded to 8
    hidden, first, seeds, steps = inputs(loaded, 5)
    eager = step._passes(hidden, first, seeds, steps)
    in_8 = step(hidden, first, seeds, steps, 8)
    in_5 = step(hidden, first, seeds, steps, 5)
    assert in_8.shape == (5, 15) and in_8.dtype == mx.int32
    np.testing.assert_array_equal(np.array(in_8), np.array(eager))
    np.testing.assert_array_equal(np.array(in_5), np.array(eager))
    for i in range(5):
        alone = step(hidden[i : i + 1], first[i : i + 1], seeds[i : i + 1], steps[i : i + 1], 1)
        np.testing.assert_array_equal(np.array(alone)[0], np.array(eager)[i])
    assert {(8, loaded.talker_dtype), (5, loaded.talker_dtype), (1, loaded.talker_dtype)} <= step.shapes
    # the codes depend on the rows' inputs: another seed gives other codes
    other = step(hidden, first, seeds + 1, steps, 8)
    assert not np.array_equal(np.array(other), np.array(eager))


def test_warm_up_compiles_each_bucket_once_and_says_so(loaded, caplog, monkeypatch):
    model = loaded.model
    step = cps.code_predictor_step(model, options(model.generate_config)[1])
    step.shapes.clear()
    monkeypatch.setattr(step, "every", False)  # the GPU's powers of two (on a CPU: every count, 1 to 6)
    engine = MlxEngine(loaded, batch_size=6)
    beats = []
    with caplog.at_level(logging.INFO, logger="narrate.worker"):
        engine.warm_up(lambda: beats.append(1))
    assert "compiling the code predictor step for 1,2,4,6 rows" in caplog.text
    assert "compiling the code predictor step for 8 rows" in caplog.text  # with riders aboard: 6 + RIDER_SEATS
    assert len(beats) == 5  # a liveness beat after each shape
    assert {b for b, _ in step.shapes} == {1, 2, 4, 6, 8}
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="narrate.worker"):
        engine.warm_up()
        MlxEngine(loaded, batch_size=4).warm_up()  # its buckets are compiled already
    assert "compiling" not in caplog.text
    assert cps.code_predictor_step(model, options(model.generate_config)[1]) is step  # one per model


def test_faster_layers_are_in_place_only_while_narrate_decodes(loaded):
    """The codec thread's decode uses the faster layers (same samples as mlx-audio's within float
    rounding: the streaming test in test_batching compares with mlx-audio's whole decode) and
    puts mlx-audio's back; the swaps are built once per decoder."""
    worker = CodecWorker(loaded.model.speech_tokenizer.decoder, threaded=False)
    kinds = {type(new).__name__ for *_, new in worker.swaps}
    assert {"DepthwiseConv1d", "PatchConv1d", "StridedTransposeConv1d", "FastLinear", "Settled"} <= kinds
    originals = [(owner, attr, old) for owner, attr, old, _ in worker.swaps]

    def now(owner, key):
        return owner[key] if isinstance(key, int) else getattr(owner, key)

    owner0, attr0, _, fast0 = next(s for s in worker.swaps if isinstance(s[3], DepthwiseConv1d))
    seen = []
    real_call = DepthwiseConv1d.__call__

    def spy(self, x):
        seen.append(getattr(owner0, attr0) is fast0)
        return real_call(self, x)

    DepthwiseConv1d.__call__ = spy
    try:
        rng = np.random.default_rng(0)
        codes = [rng.integers(0, 2048, 16).astype(np.int32) for _ in range(6)]
        fast = worker.row().decode(codes)
    finally:
        DepthwiseConv1d.__call__ = real_call
    assert fast.shape == (6 * 1920,) and seen and all(seen)
    assert all(now(owner, attr) is old for owner, attr, old in originals)  # mlx-audio's layers are back
    fast_kinds = DepthwiseConv1d | PatchConv1d | StridedTransposeConv1d | Settled
    assert not any(isinstance(m, fast_kinds) for _, m in worker.decoder.named_modules())
    assert swaps_for(worker.decoder) is worker.swaps
    worker.swaps = []  # mlx-audio's layers throughout
    slow = worker.row().decode(codes)
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-6)


def test_the_codec_graph_goes_to_mlx_a_stage_at_a_time(loaded):
    """Each upsampling ConvNeXt block (the tiny codec has four, and no decoder blocks) is computed
    when it returns, so a decode never puts its whole graph in MLX's shared task queue; where the
    graph is cut changes no sample."""
    worker = CodecWorker(loaded.model.speech_tokenizer.decoder, threaded=False)
    settled = [new for *_, new in worker.swaps if isinstance(new, Settled)]
    decoder = worker.decoder
    assert [s.stage for s in settled] == [pair[1] for pair in decoder.upsample]
    computed = []
    real_step = Settled.step

    def spy(self, x):
        y = real_step(self, x)
        computed.append(self.stage)
        return y

    rng = np.random.default_rng(1)
    codes = [rng.integers(0, 2048, 16).astype(np.int32) for _ in range(5)]
    Settled.step = spy
    try:
        cut = worker.row().decode(codes)
    finally:
        Settled.step = real_step
    assert computed == [s.stage for s in settled]  # each stage once per decode, in order
    worker.swaps = [s for s in worker.swaps if not isinstance(s[3], Settled)]  # the same layers, one graph
    whole = worker.row().decode(codes)
    np.testing.assert_array_equal(cut, whole)


@pytest.mark.parametrize("every", [False, True])
def test_the_loop_counts_the_rows_each_bucket_padded(loaded, every, monkeypatch):
    """Continuous batch of 5 (budgets 7, 3, 9, 5, 6): every step's padded rows are its bucket
    minus its rows (powers of two: 3 rows run in a bucket of 4; every row count: none)."""
    from narrate.jobs.book.synthesis import Sentence

    rng = np.random.default_rng(0)
    audio = mx.array((0.1 * rng.standard_normal(48_000)).astype(np.float32))
    embedding = type(loaded.model).extract_speaker_embedding(loaded.model, audio).astype(loaded.talker_dtype)
    ss = [Sentence(i, f"Sentence number {i}.", 100 + i, b) for i, b in enumerate((7, 3, 9, 5, 6))]
    step = cps.code_predictor_step(loaded.model, options(loaded.model.generate_config)[1])
    monkeypatch.setattr(step, "every", every)
    engine = MlxEngine(loaded, runaway_retries=0)
    frames = sum(c.frames for c in engine.batched(ss, embedding, 5))
    loop = engine.last_loop
    assert frames == 30 and len(loop.padding) == len(loop.computed)
    assert loop.padding == [cps.bucket(rows, 5, every) - rows for rows, _ in loop.computed]
    assert 3 in [rows for rows, _ in loop.computed]
    assert (sum(loop.padding) == 0) == every
