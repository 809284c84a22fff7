"""The connections `narrate serve` keeps (uvicorn's HTTP/1.1 protocol, h11, with three rules on top),
so that sockets which never send a request cannot lock people out:

- a connection that has not sent a whole request's headers within NARRATE_SERVE_HEADER_S (a new one,
  or one kept alive after a response) is closed;
- past NARRATE_SERVE_CLIENT_CONNECTIONS from one address, or NARRATE_SERVE_CONNECTIONS in all, a new
  connection closes the one that has waited longest without a request (only when every other one is
  busy with a request is the new one closed instead).

A request under way (its body, its response, an event stream) is never closed by these rules: the
guard bounds bodies (jobs/web/guard.py) and the event streams their length and number."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

WATCH_EVERY_S = 0.5


class Pool:
    """The open connections of one server, in the order they last became idle."""

    def __init__(self, header_s: float, per_client: int, total: int) -> None:
        self.header_s = header_s
        self.per_client = per_client
        self.total = total
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
        waiting = [c for c in among if c is not newcomer and c.waiting()]
        victim = min(waiting, key=lambda c: self.idle_since.get(c, 0.0)) if waiting else newcomer
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

    @property
    def address(self) -> str:
        return self.client[0] if self.client else ""

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


def protocol(header_s: float, per_client: int, total: int) -> type[Any]:
    """The protocol class for uvicorn's `http=`: GuardedH11 with a Pool of its own."""
    return type("NarrateH11", (GuardedH11,), {"pool": Pool(header_s, per_client, total)})
