"""The connections `narrate serve` keeps (uvicorn's HTTP/1.1 protocol, h11, with three rules on top),
so that sockets which never send a request cannot lock people out:

- a connection that has not sent a whole request's headers within NARRATE_SERVE_HEADER_S (a new one,
  or one kept alive after a response) is closed;
- past NARRATE_SERVE_CLIENT_CONNECTIONS from one address, or NARRATE_SERVE_CONNECTIONS in all, a new
  connection closes one of its own address or of an address that holds more connections than its
  own: the one that has waited longest without a request; where none waits, the one whose request
  body comes slowest, below NARRATE_SERVE_MIN_RATE_KIB since its headers (counted over SLOW_GRACE_S
  at least). Bodies that trickle in from many addresses cannot hold the pool full, and a new address
  always finds room (only when every such connection is busy at a fair pace is the new one closed
  instead).

A request under way at a fair pace (its body, its response, an event stream) is never closed by
these rules: the guard bounds bodies (jobs/web/guard.py) and the event streams their length and
number."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

WATCH_EVERY_S = 0.5
SLOW_GRACE_S = 1.0  # a body's rate is counted over this at least (a fast start is judged by what it sent in 1 s)


class Pool:
    """The open connections of one server, in the order they last became idle."""

    def __init__(self, header_s: float, per_client: int, total: int, min_rate: int = 32 << 10) -> None:
        self.header_s = header_s
        self.per_client = per_client
        self.total = total
        self.min_rate = min_rate  # bytes a second
        self.open: dict[GuardedH11, None] = {}
        self.idle_since: dict[GuardedH11, float] = {}
        self._watch: asyncio.TimerHandle | None = None

    def admit(self, conn: GuardedH11) -> None:
        self.open[conn] = None
        self.idle(conn)
        same = [c for c in self.open if c.address == conn.address]
        if len(same) > self.per_client:
            self._make_room(same, conn)
        if conn in self.open and len(self.open) > self.total:
            self._make_room(list(self.open), conn)
        if self._watch is None:
            self._watch = conn.loop.call_later(WATCH_EVERY_S, self._sweep, conn.loop)

    def idle(self, conn: GuardedH11) -> None:
        self.idle_since.pop(conn, None)
        self.idle_since[conn] = time.monotonic()

    def gone(self, conn: GuardedH11) -> None:
        self.open.pop(conn, None)
        self.idle_since.pop(conn, None)

    def _make_room(self, among: list[GuardedH11], newcomer: GuardedH11) -> None:
        """Close one connection of `among` for `newcomer`, of the newcomer's own address or of one that holds more
        connections than it (a crowd of addresses makes room only among itself; a new address always finds room):
        the longest idle (a new one waiting for its headers included); else the slowest body below the minimum
        rate; else the newcomer."""
        held = Counter(c.address for c in among)
        fair = [
            c
            for c in among
            if c is not newcomer and (c.address == newcomer.address or held[c.address] > held[newcomer.address])
        ]
        waiting = [c for c in fair if c.waiting()]
        if waiting:
            victim = min(waiting, key=lambda c: self.idle_since.get(c, 0.0))
        else:
            now = time.monotonic()
            slow = [(rate, c) for c in fair if (rate := c.body_rate(now)) is not None and rate < self.min_rate]
            victim = min(slow, key=lambda rc: (-held[rc[1].address], rc[0]))[1] if slow else newcomer
        victim.drop()

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        now = time.monotonic()
        for conn, since in list(self.idle_since.items()):
            if now - since > self.header_s and conn.waiting():
                conn.drop()
        self._watch = loop.call_later(WATCH_EVERY_S, self._sweep, loop) if self.open else None


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol, kept by a Pool (set on the subclass `protocol` makes)."""

    pool: Pool
    _received = 0  # bytes received on this connection
    _cycle: Any = None  # the request whose body is timed (uvicorn's cycle)
    _body_from: tuple[float, int] = (0.0, 0)  # when its headers were in, and the bytes received then

    @property
    def address(self) -> str:
        return self.client[0] if self.client else ""

    def data_received(self, data: bytes) -> None:
        self._received += len(data)
        super().data_received(data)
        if self.cycle is not self._cycle:  # a new request's headers came in whole
            self._cycle = self.cycle
            self._body_from = (time.monotonic(), self._received)

    def body_rate(self, now: float) -> float | None:
        """Bytes a second of the body the client is sending now, since its headers, counted over SLOW_GRACE_S at
        least (a body that just began is judged by what it sends in its first second); None: it sends none."""
        if self.cycle is None or self.conn.their_state is not h11.SEND_BODY:
            return None
        since, at = self._body_from
        return (self._received - at) / max(now - since, SLOW_GRACE_S)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.pool.admit(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.pool.gone(self)
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self in self.pool.open:
            self.pool.idle(self)  # kept alive: its next request's headers are due in header_s

    def waiting(self) -> bool:
        """No request is under way: the connection waits for (the rest of) a request's headers."""
        return self.cycle is None or self.cycle.response_complete

    def drop(self) -> None:
        self.pool.gone(self)
        if not self.transport.is_closing():
            self.transport.close()


def protocol(header_s: float, per_client: int, total: int, min_rate: int = 32 << 10) -> type[Any]:
    """The protocol class for uvicorn's `http=`: GuardedH11 with a Pool of its own (`min_rate`: bytes a second)."""
    return type("NarrateH11", (GuardedH11,), {"pool": Pool(header_s, per_client, total, min_rate)})
