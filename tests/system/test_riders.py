"""Riders (worker.engine.admission): another job's sentence joins a running synthesis at its next
step, a full batch or not, ahead of the synthesis's own waiting sentences; its audio goes to it alone and is
bit-identical to the same sentence synthesized on its own, and the synthesis's own audio is
unchanged. A rider still aboard when the synthesis ends early, or whose voice the model cannot
speak, is given back whole."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.engine import load_tiny, noise_embedding
from narrate.jobs.book.synthesis import Chunk, Sentence, VoiceEmbedding
from narrate.jobs.errors import BadInput
from narrate.worker.engine.decode_loop import RIDER_SEATS
from narrate.worker.engine.mlx_engine import MlxEngine

TEXTS = ["Hello there, my friend.", "The weather is nice today.", "Short.", "Another one here.", "Five.", "Six."]
BUDGETS = (7, 3, 9, 5, 6, 8)


@pytest.fixture(scope="module")
def loaded(checkpoint):
    return load_tiny(checkpoint)


@pytest.fixture(scope="module")
def embedding(loaded):
    return noise_embedding(loaded)


def book() -> list[Sentence]:
    return [Sentence(i, t, 1000 + 17 * i, BUDGETS[i]) for i, t in enumerate(TEXTS)]


class Rider:
    """A test rider: two sentences of its own, in the book's voice (or one the model refuses)."""

    def __init__(self, embedding, refuse: bool = False):
        self.sentences = [Sentence(0, "A speech request, meanwhile.", 77, 4), Sentence(1, "And one more.", 78, 6)]
        self.embedding, self.refuse = embedding, refuse
        self.chunks: list[Chunk] = []
        self.given_back: list[str] = []

    def voice(self, engine) -> VoiceEmbedding:
        if self.refuse:
            raise BadInput("this model has no such speaker")
        return VoiceEmbedding(self.embedding, cache_hit=True, encoder_runs=0)

    def chunk(self, chunk: Chunk) -> None:
        self.chunks.append(chunk)

    def give_back(self, why: str) -> None:
        self.given_back.append(why)

    def audio(self) -> dict[int, np.ndarray]:
        return {i: np.concatenate([c.pcm for c in self.chunks if c.index == i]) for i in (0, 1)}


def whole(chunks) -> dict[int, np.ndarray]:
    parts: dict[int, list] = {}
    for c in chunks:
        parts.setdefault(c.index, []).append(c.pcm)
    return {i: np.concatenate(p) for i, p in parts.items()}


def boarding_at(step_no: int, riders: list):
    """A rider source that hands `riders` over when asked for the `step_no`-th time."""
    asked = [0]

    def source():
        asked[0] += 1
        return riders if asked[0] == step_no else []

    return source


def test_a_rider_joins_ahead_of_the_books_next_sentences_and_both_sound_as_alone(loaded, embedding):
    engine = MlxEngine(loaded, runaway_retries=0)
    alone_book = whole(engine.batched(book(), embedding, 2))
    rider = Rider(embedding)
    alone_rider = whole(engine.batched(rider.sentences, embedding, 2))

    order: list[int] = []  # sentence indices in the order their rows joined the batch
    engine_add = type(engine.last_loop).add

    def add(self, rows):
        order.extend(r.index for r in rows)
        engine_add(self, rows)

    type(engine.last_loop).add = add
    try:
        out = list(engine.batched(book(), embedding, 2, riders=boarding_at(6, [rider])))
    finally:
        type(engine.last_loop).add = engine_add
    assert max(rows for rows, _ in engine.last_loop.computed) == 2 + RIDER_SEATS  # it did not wait for a free slot
    assert all(c.index >= 0 for c in out)  # the rider's audio never comes out with the book's
    got = whole(out)
    assert set(got) == set(alone_book)
    for i, pcm in got.items():
        np.testing.assert_array_equal(pcm, alone_book[i])  # the book is unchanged by its rider
    heard = rider.audio()
    for i in (0, 1):
        np.testing.assert_array_equal(heard[i], alone_rider[i])  # bit-identical to the line on its own
    assert [c.final for c in rider.chunks if c.index == 1][-1] and not rider.given_back
    riders_at = [k for k, i in enumerate(order) if i < 0]
    later_book = [k for k, i in enumerate(order) if i >= 0 and k > riders_at[0]]
    assert later_book and all(k > max(riders_at) for k in later_book), order  # ahead of the book's next ones


def test_a_rider_still_aboard_when_the_synthesis_is_closed_goes_back(loaded, embedding):
    engine = MlxEngine(loaded, runaway_retries=0)
    rider = Rider(embedding)
    chunks = engine.batched(book(), embedding, 2, riders=boarding_at(2, [rider]))
    for _ in range(3):
        next(chunks)
    chunks.close()  # a cancel mid-batch
    assert len(rider.given_back) == 1 and "ended before it" in rider.given_back[0]


def test_a_rider_the_model_cannot_speak_is_given_back_and_the_book_goes_on(loaded, embedding):
    engine = MlxEngine(loaded, runaway_retries=0)
    rider = Rider(embedding, refuse=True)
    got = whole(engine.batched(book(), embedding, 2, riders=boarding_at(1, [rider])))
    assert sorted(got) == list(range(len(TEXTS))) and not rider.chunks
    assert len(rider.given_back) == 1 and "no such speaker" in rider.given_back[0]
