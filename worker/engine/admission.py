"""Which sentence takes which batch slot, and when: the engine's scheduler over the decode loop.

Sentences come in groups (mlx_engine.batches: similar lengths, one language, reading-order
windows). Continuous: a group's sentences take the slots free at each step, so a row that ends
is replaced by the next sentence at once (the first FIRST_ROWS rows start alone, for fast first
audio). Static: a group runs alone until its last row ends.

`on_batch` is told each group's sentence indices when its first sentence is admitted; if it
raises (a stop or cancel request), nothing more is admitted, the rows in flight finish and their
audio comes out, then the exception goes on. A runaway (budget used without EOS) is held back
and, once its group has ended, synthesized again with a new seed as a group of its own, up to
`retries` times.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from narrate.jobs.book.synthesis import Chunk, OnBatch, Sentence
from narrate.worker.engine.decode_loop import FIRST_CHUNK, DecodeLoop, Row

SeedFor = Callable[[int, int], int]  # (sentence seed, attempt) -> the seed of that take
# Continuous: the first rows of a synthesis run alone until their first audio chunk is out, then
# the batch fills up; so the first audio comes as fast as from a batch of FIRST_ROWS.
FIRST_ROWS = 4


@dataclass
class _Group:
    sentences: list[Sentence]
    attempt: int
    left: int = 0  # sentences not yet final
    runaways: list[Sentence] = field(default_factory=list)


def run(
    loop: DecodeLoop,
    groups: Sequence[Sequence[Sentence]],
    size: int,
    retries: int,
    seed_for: SeedFor,
    on_batch: OnBatch | None = None,
) -> Iterator[Chunk]:
    """All sentences of `groups` through `loop`, at most `size` rows at a time; chunks out."""
    queue: deque[_Group] = deque(_Group(list(g), 0) for g in groups)
    waiting: deque[tuple[Sentence, _Group]] = deque()
    owner: dict[int, _Group] = {}
    held: dict[int, list[Chunk]] = {}
    stop: Exception | None = None

    def admit() -> None:
        nonlocal stop
        if loop.continuous:
            warming = len(loop.computed) < FIRST_CHUNK  # the first rows' first chunk is not out yet
            free = (min(size, FIRST_ROWS) if warming else size) - loop.running
        else:
            free = size if not loop.busy else 0
        while free > 0 and stop is None:
            if not waiting:
                if not queue or (not loop.continuous and loop.busy):
                    return
                g = queue.popleft()
                try:
                    if on_batch is not None:
                        on_batch([s.index for s in g.sentences])
                except Exception as e:  # noqa: BLE001 - re-raised once the rows in flight are out
                    stop = e
                    return
                g.left = len(g.sentences)
                waiting.extend((s, g) for s in g.sentences)
            take = [waiting.popleft() for _ in range(min(free, len(waiting)))]
            for s, g in take:
                owner[s.index] = g
            loop.add([Row(s.index, seed_for(s.seed, g.attempt), s.budget, s.text, s.language) for s, g in take])
            free -= len(take)

    def out(c: Chunk) -> Iterator[Chunk]:
        g = owner[c.index]
        chunk = dataclasses.replace(c, takes=g.attempt + 1)
        if g.attempt >= retries:
            yield chunk
        else:
            held.setdefault(c.index, []).append(chunk)  # hold a sentence until it is known good
            if c.final:
                parts = held.pop(c.index)
                if c.runaway:
                    g.runaways.append(next(s for s in g.sentences if s.index == c.index))
                else:
                    yield from parts
        if c.final:
            del owner[c.index]
            g.left -= 1
            if g.left == 0 and g.runaways:
                queue.appendleft(_Group(sorted(g.runaways, key=lambda s: s.index), g.attempt + 1))

    first_out = False
    try:
        while True:
            if loop.continuous and not first_out and len(loop.computed) >= FIRST_CHUNK:
                for c in loop.ready(wait=True):  # the first chunk out before the batch fills up
                    yield from out(c)
                first_out = True
            admit()
            if loop.busy:
                for c in loop.step():
                    yield from out(c)
                continue
            # Nothing running: the codec's last chunks (a group's end may queue its runaways).
            last = list(loop.ready(wait=True))
            for c in last:
                yield from out(c)
            if not last:
                break
    finally:
        loop.close()
    if stop is not None:
        raise stop
