"""What one client of `narrate serve` may take, counted by its address (the peer's, or the one a
trusted proxy names: NARRATE_SERVE_TRUSTED_PROXIES): requests in a sliding window (submissions a
minute, wrong keys a minute) and things held at once (event streams). Counted in this process's
memory: each server counts its own clients."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

from narrate.jobs.web.errors import ApiError

WRONG_KEYS = 5  # wrong API keys (Bearer or the login form) one address may send a minute
WRONG_KEYS_WINDOW_S = 60.0
MAX_CLIENTS = 10_000  # addresses remembered at once (the oldest is forgotten first)


class Window:
    """At most `limit` events per `window_s` seconds for each key (a sliding window)."""

    def __init__(self, limit: int, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window_s = window_s
        self.clock = clock
        self._seen: dict[str, deque[float]] = {}

    def _recent(self, key: str) -> deque[float]:
        now = self.clock()
        times = self._seen.pop(key, None) or deque()
        while times and now - times[0] >= self.window_s:
            times.popleft()
        self._seen[key] = times  # the most recently seen key last
        while len(self._seen) > MAX_CLIENTS:
            del self._seen[next(iter(self._seen))]
        return times

    def wait_s(self, key: str) -> float:
        """0 if `key` may go on now; else the seconds until it may."""
        times = self._recent(key)
        if len(times) < self.limit:
            return 0.0
        return max(0.0, self.window_s - (self.clock() - times[0]))

    def record(self, key: str) -> None:
        self._recent(key).append(self.clock())

    def take(self, key: str, what: str) -> None:
        """Count one event of `key`, or raise ApiError 429 (with Retry-After) if it is over its limit."""
        wait = self.wait_s(key)
        if wait > 0:
            raise too_many(what, wait)
        self.record(key)


class Slots:
    """At most `limit` things held at once by each key."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held: dict[str, int] = {}

    def take(self, key: str, what: str) -> Callable[[], None]:
        """Hold one for `key` (raises ApiError 429 if it holds `limit` already); the function that lets
        it go (once, however often it is called)."""
        if self._held.get(key, 0) >= self.limit:
            raise ApiError(429, f"{what}: {self.limit} are open from this address already; close one first")
        self._held[key] = self._held.get(key, 0) + 1
        done = False

        def release() -> None:
            nonlocal done
            if done:
                return
            done = True
            left = self._held.get(key, 1) - 1
            if left > 0:
                self._held[key] = left
            else:
                self._held.pop(key, None)

        return release


def too_many(what: str, wait_s: float) -> ApiError:
    seconds = max(1, math.ceil(wait_s))
    return ApiError(429, f"{what}; try again in {seconds} s", headers={"Retry-After": str(seconds)})


class Limits:
    """The limits of one server (made once by jobs/web/app.py, kept on the app's state)."""

    def __init__(self, submits_per_min: int, client_streams: int) -> None:
        self.submits = Window(submits_per_min, 60.0)
        self.wrong_keys = Window(WRONG_KEYS, WRONG_KEYS_WINDOW_S)
        self.streams = Slots(client_streams)


def client_of(scope_client: tuple[str, int] | list | None) -> str:
    """The address a request came from (uvicorn has already put a trusted proxy's X-Forwarded-For there)."""
    return str(scope_client[0]) if scope_client else "unknown"
