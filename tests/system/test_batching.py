"""Batched x-vector synthesis (mlx_engine, decode_loop, sampling, mlx_compat): same audio alone or
in any batch, rows stop at their own EOS or budget, runaways are retried once with a new seed,
and a change in any mlx-audio internal narrate uses fails loudly."""

from __future__ import annotations

import functools

import mlx.core as mx
import numpy as np
import pytest
from helpers.engine import load_tiny, noise_embedding
from narrate.jobs.book.synthesis import Sentence
from narrate.worker.engine import decode_loop, mlx_compat
from narrate.worker.engine.mlx_engine import MlxEngine, retry_seed

TEXTS = [
    "Hello there, my friend.",
    "The weather is nice today, isn't it?",
    "Short.",
    "Another sentence, of a rather different length, is here as well.",
    "Five.",
]


@pytest.fixture(scope="module")
def loaded(checkpoint):
    return load_tiny(checkpoint)


@pytest.fixture(scope="module")
def embedding(loaded):
    return noise_embedding(loaded)


def sentences(budget=7):
    return [Sentence(i, t, 1000 + 17 * i, budget) for i, t in enumerate(TEXTS)]


def collect(engine, ss, emb, size) -> dict[int, tuple[np.ndarray, int, bool, int]]:
    parts: dict[int, list] = {}
    for c in engine.batched(ss, emb, size):
        parts.setdefault(c.index, []).append(c)
    out = {}
    for i, cs in parts.items():
        assert cs[-1].final and not any(c.final for c in cs[:-1])
        out[i] = (
            np.concatenate([c.pcm for c in cs]),
            sum(c.frames for c in cs),
            cs[-1].runaway,
            cs[-1].takes,
        )
    return out


def test_mlx_audio_internals_are_there(loaded):
    mlx_compat.check_internals(loaded.model)


@pytest.mark.parametrize(
    ("where", "attr"),
    [("", "generate_config"), ("speech_tokenizer", "decode_upsample_rate"), ("kv", "offset")],
)
def test_a_missing_model_attribute_fails_loudly(loaded, monkeypatch, where, attr):
    """Attributes of a loaded model, including the KV cache fields the decode loop resets."""
    model = loaded.model
    if where == "kv":

        class NoOffset:
            keys = values = None

            def update_and_fetch(self, keys, values):
                return keys, values

        monkeypatch.setattr(model.talker.code_predictor, "make_cache", lambda: [NoOffset()])
    else:
        owner = getattr(model, where) if where else model
        monkeypatch.delattr(owner, attr)
    with pytest.raises(mlx_compat.InternalsChanged, match=rf"lacks \['{attr}'\]"):
        mlx_compat.check_internals(model)
    mlx_compat.check_internals()  # the class-level checks alone cannot see it


def test_the_internals_are_checked_once_per_loaded_model(loaded, embedding, monkeypatch):
    """Before a loaded model's first synthesis, not before every one; a model loaded again is checked
    again, and a check that failed is not taken as passed."""
    from dataclasses import replace

    from narrate.worker.engine import mlx_engine

    checked: list = []
    failing = [True]

    def check(model):
        checked.append(model)
        if failing.pop():
            raise mlx_compat.InternalsChanged("changed")
        mlx_compat.check_internals(model)

    monkeypatch.setattr(mlx_engine, "check_internals", check)
    ss = [Sentence(0, TEXTS[0], 7, 2)]
    model = replace(loaded, internals_checked=False)  # this model as loaded: never checked
    with pytest.raises(mlx_compat.InternalsChanged):
        list(MlxEngine(model).batched(ss, embedding, 1))
    assert len(checked) == 1 and not model.internals_checked
    failing.append(False)
    for engine in (MlxEngine(model), MlxEngine(model), MlxEngine(model, continuous=False)):
        assert sum(c.frames for c in engine.batched(ss, embedding, 1)) == 2
    assert len(checked) == 2 and all(m is loaded.model for m in checked) and model.internals_checked
    failing.append(False)
    list(MlxEngine(replace(loaded, internals_checked=False)).batched(ss, embedding, 1))  # loaded again
    assert len(checked) == 3


MIXED = (7, 3, 9, 5, 6)  # budgets: rows end at different steps, so others join late


def mixed() -> list[Sentence]:
    return [Sentence(i, t, 1000 + 17 * i, MIXED[i]) for i, t in enumerate(TEXTS)]


@pytest.fixture(scope="module")
def alone(loaded, embedding):
    """Each sentence of `mixed()` synthesized alone (a batch of one)."""
    engine = MlxEngine(loaded, runaway_retries=0)
    out = {}
    for s in mixed():
        out.update(collect(engine, [s], embedding, 1))
    return out


@pytest.mark.parametrize(("size", "continuous"), [(2, True), (5, True), (5, False)])
def test_same_audio_alone_or_in_any_batch_joining_early_or_late(loaded, embedding, alone, size, continuous):
    """Continuous batches of 2: sentences 2, 3, 4 join at steps 3, 7 and 9, beside rows at other
    frames; static batches: finished rows stay. Every sentence is bit-identical to it alone."""
    engine = MlxEngine(loaded, runaway_retries=0, continuous=continuous)
    batched = collect(engine, mixed(), embedding, size)
    assert set(batched) == set(alone)
    for i, (pcm, frames, runaway, _) in batched.items():
        assert frames == MIXED[i] and runaway  # random weights never emit EOS
        assert pcm.size == frames * 1920
        np.testing.assert_array_equal(pcm, alone[i][0])  # bit-identical, not just close


def test_no_step_computes_a_finished_row(loaded, embedding):
    """Rows computed per step: continuous batching never computes a finished row and refills
    freed slots at once; the static batch of the same sentences computes its finished rows."""
    continuous = MlxEngine(loaded, runaway_retries=0)
    list(continuous.batched(mixed(), embedding, 2))
    steps = continuous.last_loop.computed
    assert all(done == 0 for _, done in steps)
    assert sum(rows for rows, _ in steps) == sum(MIXED)  # one computed row per frame, no more
    rows = [rows for rows, _ in steps]
    assert rows == [2] * 13 + [1] * 4  # both slots busy until the last sentence is in, then it alone
    static = MlxEngine(loaded, runaway_retries=0, continuous=False)
    list(static.batched(mixed(), embedding, 5))
    assert sum(rows for rows, _ in static.last_loop.computed) == 5 * max(MIXED)
    assert sum(done for _, done in static.last_loop.computed) == 5 * max(MIXED) - sum(MIXED)


def test_streaming_codec_equals_one_decode_of_the_whole_sentence(loaded, embedding, alone):
    """Each frame is decoded once, in pieces of 4 then 24 frames by the row's streaming state;
    the samples equal one decode of all the sentence's frames, within float rounding."""
    from narrate.worker.engine.codec_stream import CodecWorker

    rng = np.random.default_rng(1)
    codes = [rng.integers(0, 2048, 16).astype(np.int32) for _ in range(33)]
    worker = CodecWorker(loaded.model.speech_tokenizer.decoder, threaded=True)
    one, two = worker.row(), worker.row()
    try:  # two rows interleaved: each keeps its own state
        pieces = [worker.submit(r, codes[a:b]).result() for a, b in ((0, 4), (4, 28), (28, 33)) for r in (one, two)]
    finally:
        worker.close()
    full = loaded.model.speech_tokenizer.decoder(mx.array(np.stack(codes, axis=1)[None]))[0, 0]
    streamed = np.concatenate(pieces[0::2])
    np.testing.assert_array_equal(streamed, np.concatenate(pieces[1::2]))
    assert streamed.shape == (33 * 1920,)
    np.testing.assert_allclose(streamed, np.array(full), atol=1e-5, rtol=0)


def test_rows_stop_at_their_own_eos(loaded, embedding, monkeypatch):
    eos = loaded.model.config.talker_config.codec_eos_token_id
    real = decode_loop.sample_rows
    target_seed = sentences()[1].seed

    def eos_for_row_1_at_step_3(logits, seeds, step, stream, opts, *a, **k):
        tokens = real(logits, seeds, step, stream, opts, *a, **k)
        if stream == 0:  # `step`: each row's frame
            tokens = mx.where((seeds == target_seed) & (step == 3), mx.array(eos, dtype=tokens.dtype), tokens)
        return tokens

    monkeypatch.setattr(decode_loop, "sample_rows", eos_for_row_1_at_step_3)
    engine = MlxEngine(loaded, runaway_retries=1)
    out = collect(engine, sentences(), embedding, 5)
    pcm, frames, runaway, takes = out[1]
    assert (frames, runaway, takes) == (3, False, 1) and pcm.size == 3 * 1920
    assert all(out[i][1:] == (7, True, 2) for i in (0, 2, 3, 4))  # the others ran on, were retried


def test_a_stop_between_groups_lets_the_rows_in_flight_finish(loaded, embedding):
    """on_batch raising (a stop or cancel) admits nothing more; the rows already in the batch
    finish and come out whole before the exception goes on."""

    class Stop(Exception):
        pass

    told: list[list[int]] = []

    def on_batch(indices):
        told.append(indices)
        if len(told) == 2:
            raise Stop

    finals = []
    with pytest.raises(Stop):
        for c in MlxEngine(loaded, runaway_retries=0).batched(mixed(), embedding, 2, on_batch):
            if c.final:
                finals.append(c.index)
    assert len(told) == 2 and sorted(finals) == sorted(told[0])


def test_runaway_is_retried_once_with_a_new_seed(loaded, embedding):
    ss = sentences(budget=5)[:2]
    retried = collect(MlxEngine(loaded, runaway_retries=1), ss, embedding, 2)
    reseeded = [Sentence(s.index, s.text, retry_seed(s.seed, 1), s.budget) for s in ss]
    direct = collect(MlxEngine(loaded, runaway_retries=0), reseeded, embedding, 2)
    for i in (0, 1):
        assert retried[i][2:] == (True, 2)  # still a runaway (random weights), after 2 takes
        np.testing.assert_array_equal(retried[i][0], direct[i][0])


def test_the_sentences_language_reaches_the_model(loaded, embedding, monkeypatch):
    """Each batch holds one language and tells the model that language (codec language tag)."""
    model_cls = type(loaded.model)
    real = model_cls._prepare_batch_inputs
    seen: list[tuple[list[str], str]] = []

    @functools.wraps(real)  # the internals check reads its signature
    def spy(self, texts, language="auto", **kw):
        seen.append((list(texts), language))
        return real(self, texts, language=language, **kw)

    monkeypatch.setattr(model_cls, "_prepare_batch_inputs", spy)
    ss = [Sentence(i, t, 5 + i, 3, "german" if i % 2 else "english") for i, t in enumerate(TEXTS[:4])]
    out = collect(MlxEngine(loaded, runaway_retries=0), ss, embedding, 4)
    assert sorted(out) == [0, 1, 2, 3]
    assert len(seen) == 2
    assert {lang: sorted(t) for t, lang in seen} == {
        "english": sorted([TEXTS[0], TEXTS[2]]),
        "german": sorted([TEXTS[1], TEXTS[3]]),
    }


@pytest.mark.parametrize(("size", "continuous"), [(4, True), (5, False)])
def test_first_audio_comes_after_a_few_frames_whatever_the_batch(loaded, embedding, size, continuous):
    """What keeps the first audio as fast in a batch of 16 as in a batch of 4: a row's first chunk
    is sent to the codec after FIRST_CHUNK frames, not when the row or the batch ends (when it
    arrives depends on the codec thread; the bench measures that time)."""
    from narrate.worker.engine.decode_loop import FIRST_CHUNK

    long = [Sentence(i, t, 1000 + 17 * i, 9) for i, t in enumerate(TEXTS)]
    engine = MlxEngine(loaded, runaway_retries=0, continuous=continuous)
    firsts: dict[int, int] = {}
    for c in engine.batched(long, embedding, size):
        firsts.setdefault(c.index, c.frames)
    assert len(firsts) == len(long) and set(firsts.values()) == {FIRST_CHUNK}
