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

Riders (jobs.book.synthesis.Rider: a speech request's clip job, taken along by the worker while a
book runs) board between steps and join at the next step, ahead of the groups' waiting sentences:
up to RIDER_SEATS rows beyond the batch size (a full batch does not make them wait for a row to
end; the book's sentences wait until the batch is back under its size), as rows of negative index
whose chunks go to the rider, not out (a rider's runaway is not synthesized again: its clip says
so). A rider still aboard when the synthesis ends early (a cancel, an error) is given back to its
queue, whole.

The state lives in `Admission` (one per synthesis); its clock is the decode loop's step counter
(`DecodeLoop.steps`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from narrate.jobs.book.synthesis import Chunk, OnBatch, OnDropped, Sentence
from narrate.jobs.task.model_protocols import Rider
from narrate.worker.engine.decode_loop import FIRST_CHUNK, RIDER_SEATS, DecodeLoop, Row
from narrate.worker.engine.row_voices import RowVoice

SeedFor = Callable[[int, int], int]  # (sentence seed, attempt) -> the seed of that take
VoiceFor = Callable[[Sentence], RowVoice]  # the voice a sentence is spoken in
Boarding = Callable[[], list[tuple[Rider, RowVoice]]]  # riders come since last asked, with their voices
log = logging.getLogger("narrate.worker")
# Continuous: the first rows of a synthesis run alone until their first audio chunk is out, then
# the batch fills up; so the first audio comes as fast as from a batch of FIRST_ROWS.
FIRST_ROWS = 4


@dataclass
class _Group:
    sentences: list[Sentence]
    attempt: int
    left: int = 0  # sentences not yet final
    runaways: list[Sentence] = field(default_factory=list)


@dataclass
class _Riding:
    rider: Rider
    off: bool = False  # given back: its later chunks are dropped


class Admission:
    """One synthesis's scheduler: groups of sentences into `loop`'s free slots, chunks out.

    State: `queue` the groups not started yet (a group's runaways go back to its front),
    `waiting` the sentences of started groups not admitted yet, `owner` the group of each
    sentence in the loop, `held` the chunks of each sentence kept until it is known not to be a
    runaway, `stop` what `on_batch` raised, `first_out` whether the first rows' first chunk is out.
    """

    def __init__(
        self,
        loop: DecodeLoop,
        groups: Sequence[Sequence[Sentence]],
        size: int,
        retries: int,
        seed_for: SeedFor,
        voice_for: VoiceFor,
        on_batch: OnBatch | None = None,
        boarding: Boarding | None = None,
        on_dropped: OnDropped | None = None,
    ):
        self.loop = loop
        self.size = size  # the most rows at once
        self.retries = retries
        self.seed_for = seed_for
        self.voice_for = voice_for
        self.on_batch = on_batch
        self.queue: deque[_Group] = deque(_Group(list(g), 0) for g in groups)
        self.waiting: deque[tuple[Sentence, _Group]] = deque()
        self.owner: dict[int, _Group] = {}
        self.held: dict[int, list[Chunk]] = {}
        self.stop: Exception | None = None
        self.first_out = False
        self.boarding = boarding
        self.on_dropped = on_dropped  # told the chunks of each runaway take it drops
        self.riding: dict[int, tuple[_Riding, int]] = {}  # a rider's row index (below 0): its ride, its sentence
        self.rider_rows: deque[Row] = deque()  # riders' rows waiting for a slot (they go first)
        self.last_rider_row = 0

    def run(self) -> Iterator[Chunk]:
        """Every sentence's chunks; the loop closed at the end; then what `on_batch` raised, if anything."""
        try:
            yield from self._drive()
        finally:
            self.loop.close()
            self.set_down("the synthesis it rode along ended before it")
        if self.stop is not None:
            raise self.stop

    def _drive(self) -> Iterator[Chunk]:
        loop = self.loop
        while True:
            if self._first_chunk_due():
                yield from self._out(loop.ready(wait=True))  # the first chunk out before the batch fills up
                self.first_out = True
            self.admit()
            if loop.busy:
                yield from self._out(loop.step())
                continue
            # Nothing running: the codec's last chunks (a group's end may queue its runaways).
            last = list(loop.ready(wait=True))
            yield from self._out(last)
            if not last:
                return

    def _first_chunk_due(self) -> bool:
        return self.loop.continuous and not self.first_out and self.loop.steps >= FIRST_CHUNK

    def free_slots(self) -> int:
        """Rows that may join now: continuous, up to the size (FIRST_ROWS while the first rows' first
        chunk is not out yet); static, the whole size once the batch is empty."""
        loop = self.loop
        if not loop.continuous:
            return 0 if loop.busy else self.size
        warming = loop.steps < FIRST_CHUNK
        return (min(self.size, FIRST_ROWS) if warming else self.size) - loop.running

    def admit(self) -> None:
        """Riders' rows, then waiting sentences, into the free slots, starting the next groups as needed."""
        self.board()
        seats = self.size + RIDER_SEATS - self.loop.running  # riders never wait for a book's row to end
        if self.rider_rows and seats > 0:
            self.loop.add([self.rider_rows.popleft() for _ in range(min(seats, len(self.rider_rows)))])
        free = self.free_slots()
        while free > 0 and self.stop is None:
            if not self.waiting and not self.start_group():
                return
            take = [self.waiting.popleft() for _ in range(min(free, len(self.waiting)))]
            self.add_rows(take)
            free -= len(take)

    def start_group(self) -> bool:
        """The next group's sentences to `waiting` (`on_batch` told first); False: none may start."""
        if not self.queue or (not self.loop.continuous and self.loop.busy):
            return False
        g = self.queue.popleft()
        try:
            if self.on_batch is not None:
                self.on_batch([s.index for s in g.sentences])
        except Exception as e:  # noqa: BLE001 - re-raised once the rows in flight are out
            self.stop = e
            return False
        g.left = len(g.sentences)
        self.waiting.extend((s, g) for s in g.sentences)
        return True

    def add_rows(self, take: Sequence[tuple[Sentence, _Group]]) -> None:
        """Sentences into the loop, each seeded for its group's attempt, each in its voice."""
        for s, g in take:
            self.owner[s.index] = g
        self.loop.add(
            [
                Row(s.index, self.seed_for(s.seed, g.attempt), s.budget, self.voice_for(s), s.text, s.language)
                for s, g in take
            ]
        )

    def board(self) -> None:
        """The riders come since the last step, each sentence a row waiting for a slot."""
        if self.boarding is None:
            return
        for rider, voice in self.boarding():
            ride = _Riding(rider)
            for s in rider.sentences:
                self.last_rider_row -= 1  # below 0: never a sentence of the synthesis
                index = self.last_rider_row
                self.riding[index] = (ride, s.index)
                self.rider_rows.append(Row(index, self.seed_for(s.seed, 0), s.budget, voice, s.text, s.language))

    def ride_out(self, c: Chunk) -> None:
        """A rider's chunk to the rider (its own sentence index)."""
        ride, own = self.riding[c.index]
        if c.final:
            del self.riding[c.index]
        if ride.off:
            return
        try:
            ride.rider.chunk(dataclasses.replace(c, index=own))
        except Exception as e:  # noqa: BLE001 - its store failed (Redis away): it goes back, the book goes on
            ride.off = True
            log.warning("a rider failed to take its audio: %s", e)
            ride.rider.give_back(f"its audio could not be stored ({e})")

    def set_down(self, why: str) -> None:
        """Give back every rider not done yet (the synthesis ended first)."""
        rides = {id(ride): ride for ride, _ in self.riding.values() if not ride.off}
        self.riding.clear()
        self.rider_rows.clear()
        for ride in rides.values():
            try:
                ride.rider.give_back(why)
            except Exception as e:  # noqa: BLE001 - its claim stays: the host's next worker puts it back
                log.warning("could not give a rider back: %s", e)

    def _out(self, chunks: Iterable[Chunk]) -> Iterator[Chunk]:
        for c in chunks:
            yield from self.emit(c)

    def emit(self, c: Chunk) -> Iterator[Chunk]:
        """A chunk from the loop, out now (last take), or held until its sentence ends without runaway
        (a rider's: to its rider)."""
        if c.index < 0:
            self.ride_out(c)
            return
        g = self.owner[c.index]
        chunk = dataclasses.replace(c, takes=g.attempt + 1)
        if g.attempt >= self.retries:
            yield chunk
        else:
            yield from self.hold(g, chunk)
        if c.final:
            self.retire(g, c.index)

    def hold(self, g: _Group, chunk: Chunk) -> Iterator[Chunk]:
        """Hold a sentence's chunks until its last: then all of them out, or the sentence a runaway of `g`."""
        self.held.setdefault(chunk.index, []).append(chunk)
        if not chunk.final:
            return
        parts = self.held.pop(chunk.index)
        if chunk.runaway:
            g.runaways.append(next(s for s in g.sentences if s.index == chunk.index))
            if self.on_dropped is not None:  # computed all the same: the batch log counts its frames
                for part in parts:
                    self.on_dropped(part)
        else:
            yield from parts

    def retire(self, g: _Group, index: int) -> None:
        """A sentence of `g` has ended; the group's end queues its runaways to go next."""
        del self.owner[index]
        g.left -= 1
        if g.left == 0 and g.runaways:
            self.queue.appendleft(_Group(sorted(g.runaways, key=lambda s: s.index), g.attempt + 1))


def run(
    loop: DecodeLoop,
    groups: Sequence[Sequence[Sentence]],
    size: int,
    retries: int,
    seed_for: SeedFor,
    voice_for: VoiceFor,
    on_batch: OnBatch | None = None,
    boarding: Boarding | None = None,
    on_dropped: OnDropped | None = None,
) -> Iterator[Chunk]:
    """All sentences of `groups` through `loop`, at most `size` rows at a time, each in the voice
    `voice_for` gives it, with the riders `boarding` brings along; chunks out."""
    yield from Admission(loop, groups, size, retries, seed_for, voice_for, on_batch, boarding, on_dropped).run()
