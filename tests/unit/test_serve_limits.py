"""`narrate serve`'s limits, in this process (jobs/web/guard.py, jobs/web/limits.py): the body cap
each route gets (only the upload routes a large one), the Bearer scheme in any case, loopback
decided by address not by prefix, wrong keys counted per address (then 429 whatever key comes),
submissions a minute per address (a redo is one), event streams held at once, and bodies timed as a whole."""

from __future__ import annotations

import asyncio

import pytest
from narrate.jobs.web.errors import ApiError
from narrate.jobs.web.guard import (
    JSON_BODY_CAP,
    SMALL_BODY_CAP,
    UPLOAD_ROUTES,
    BodyRules,
    Guard,
    Stalled,
    TooSlow,
    is_loopback,
    served_hosts,
)
from narrate.jobs.web.limits import Limits, Slots, Window

KEY = "k" * 32
HOST = {"host": "127.0.0.1:8000"}
MULTIPART = {"content-type": "multipart/form-data; boundary=x"}


async def _never(scope, receive, send) -> None:
    raise AssertionError


def guard(key: str | None = KEY, rules: BodyRules | None = None) -> Guard:
    return Guard(_never, served_hosts("127.0.0.1", 8000), key, rules or BodyRules(), 400 << 20)


@pytest.mark.parametrize(
    "method, path, headers, cap",
    [
        ("POST", "/login", MULTIPART, SMALL_BODY_CAP),  # the login form: never an upload's cap
        ("POST", "/login", {}, SMALL_BODY_CAP),
        ("POST", "/logout", MULTIPART, SMALL_BODY_CAP),
        ("POST", "/jobs/narrate-1/cancel", MULTIPART, SMALL_BODY_CAP),
        ("POST", "/v1/narrations/narrate-1/cancel", MULTIPART, SMALL_BODY_CAP),
        ("POST", "/v1/narrations/narrate-1/redo", {"content-type": "application/json"}, SMALL_BODY_CAP),
        ("POST", "/jobs/narrate-1/redo", MULTIPART, SMALL_BODY_CAP),
        ("DELETE", "/v1/narrations/narrate-1", MULTIPART, SMALL_BODY_CAP),
        ("POST", "/voices/design", MULTIPART, SMALL_BODY_CAP),
        ("POST", "/feeds/x.xml", MULTIPART, SMALL_BODY_CAP),
        ("PUT", "/v1/narrations", MULTIPART, SMALL_BODY_CAP),  # only a POST uploads
        ("POST", "/v1/audio/speech", {"content-type": "application/json"}, JSON_BODY_CAP),
        ("POST", "/v1/audio/speech", MULTIPART, JSON_BODY_CAP),
        ("POST", "/v1/narrations", {"content-type": "application/x-www-form-urlencoded"}, JSON_BODY_CAP),
        *[("POST", path, MULTIPART, 400 << 20) for path in sorted(UPLOAD_ROUTES)],
    ],
)
def test_only_the_upload_routes_take_a_large_body(method, path, headers, cap):
    assert guard()._cap(method, path, headers)[0] == cap


def test_the_bearer_scheme_is_read_in_any_case():
    g = guard()
    for header in (f"Bearer {KEY}", f"bearer {KEY}", f"BEARER {KEY}", f"  bearer   {KEY}  "):
        assert g.check("GET", {**HOST, "authorization": header}, "/v1/narrations") is None, header
    for header in (f"Basic {KEY}", KEY, f"Bearer{KEY}", f"Bearer {KEY}x"):
        assert g.check("GET", {**HOST, "authorization": header}, "/v1/narrations")[0] == 401, header


@pytest.mark.parametrize(
    "bind", ["127.0.0.1", "127.0.0.2", "127.255.255.254", "localhost", "::1", "[::1]", "LOCALHOST"]
)
def test_loopback_addresses(bind):
    assert is_loopback(bind)


@pytest.mark.parametrize(
    "bind", ["127.evil.example", "127.0.0.1.evil.example", "127.", "0.0.0.0", "::", "10.0.0.1", "localhost.evil", ""]
)
def test_a_name_that_begins_with_127_is_not_loopback(bind):
    assert not is_loopback(bind)


def test_wrong_keys_from_one_address_are_refused_for_a_while_but_never_the_right_key():
    """Past 5 wrong keys a minute from one address, a wrong one is 429; the right key still passes there (behind a
    proxy every key holder shares the address: someone guessing must not lock them out)."""
    g = guard()
    wrong = {**HOST, "authorization": "Bearer " + "w" * 32}
    right = {**HOST, "authorization": f"Bearer {KEY}"}
    for _ in range(5):
        assert g.check("GET", wrong, "/v1/narrations", "10.0.0.7")[0] == 401
    with pytest.raises(ApiError) as refused:
        g.check("GET", wrong, "/v1/narrations", "10.0.0.7")  # guessing has stopped
    assert refused.value.status == 429 and int(refused.value.headers["Retry-After"]) >= 1
    assert g.check("GET", right, "/v1/narrations", "10.0.0.7") is None  # the right key is never refused
    assert g.check("GET", right, "/v1/narrations", "10.0.0.8") is None
    assert g.check("GET", HOST, "/v1/narrations", "10.0.0.7")[0] == 401  # sending no key is no guess


def _status(g: Guard, method: str, path: str, client: str) -> int:
    """The status the guard answers (200: it let the request through to the app)."""
    sent: list[dict] = []

    async def run() -> None:
        async def receive() -> dict:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": method,
            "path": path,
            "headers": [(b"host", b"127.0.0.1:8000")],
            "client": (client, 5000),
        }
        await g(scope, receive, send)

    asyncio.run(run())
    return int(sent[0]["status"])


def test_a_redo_is_counted_as_a_submission():
    async def ok(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    g = Guard(ok, served_hosts("127.0.0.1", 8000), None, BodyRules(), 400 << 20, limits=Limits(3, 4))
    paths = ("/v1/narrations/narrate-1/redo", "/jobs/narrate-1/redo", "/v1/narrations", "/v1/narrations/narrate-1/redo")
    said = [_status(g, "POST", path, "10.5.0.1") for path in paths]
    assert said == [200, 200, 200, 429]
    assert _status(g, "POST", "/jobs/narrate-1/redo", "10.5.0.1") == 429
    assert _status(g, "POST", "/v1/narrations/narrate-1/cancel", "10.5.0.1") == 200  # not a submission
    assert _status(g, "GET", "/v1/narrations/narrate-1/redo", "10.5.0.1") == 200  # only a POST makes work
    assert _status(g, "POST", "/v1/narrations/narrate-1/redo", "10.5.0.2") == 200  # another address


def test_a_window_counts_per_key_and_lets_go_after_it():
    now = [0.0]
    w = Window(3, 60.0, clock=lambda: now[0])
    for _ in range(3):
        w.take("a", "too many")
    with pytest.raises(ApiError) as refused:
        w.take("a", "too many")
    assert refused.value.status == 429 and refused.value.headers["Retry-After"] == "60"
    w.take("b", "too many")
    now[0] = 30.0
    assert w.wait_s("a") == pytest.approx(30.0)
    now[0] = 60.0
    w.take("a", "too many")


def test_slots_are_held_per_key_and_let_go_once():
    s = Slots(2)
    first, _second = s.take("a", "streams"), s.take("a", "streams")
    with pytest.raises(ApiError) as refused:
        s.take("a", "streams")
    assert refused.value.status == 429
    s.take("b", "streams")
    first()
    first()  # twice is once
    s.take("a", "streams")
    with pytest.raises(ApiError):
        s.take("a", "streams")


def _body(g: Guard, pieces: list[tuple[float, bytes, bool]], cap: int = 1 << 30):
    """Feed `pieces` (delay, bytes, more_body) through the guard's receive; what it raised, if anything."""

    async def run():
        queue = list(pieces)

        async def receive():
            delay, data, more = queue.pop(0)
            await asyncio.sleep(delay)
            return {"type": "http.request", "body": data, "more_body": more}

        bounded = g._receive(receive, cap, "")
        for _ in pieces:
            await bounded()

    try:
        asyncio.run(run())
    except Exception as e:  # noqa: BLE001 - the test looks at what it was
        return e
    return None


def test_a_body_that_trickles_is_408_though_no_piece_stalls():
    g = guard(rules=BodyRules(stall_s=0.3, min_rate=1024, total_s=60))
    said = _body(g, [(0.2, b"x", True)] * 10)  # a byte every 0.2 s: never a stall of 0.3 s
    assert isinstance(said, TooSlow) and said.status_code == 408 and "KiB/s" in said.detail
    assert _body(g, [(0.2, b"x" * 1024, True)] * 4 + [(0.0, b"", False)]) is None  # fast enough


def test_a_body_is_bounded_in_all_and_between_pieces():
    assert isinstance(_body(guard(rules=BodyRules(stall_s=0.2, min_rate=1, total_s=60)), [(0.5, b"x", True)]), Stalled)
    g = guard(rules=BodyRules(stall_s=0.3, min_rate=1, total_s=0.5))
    said = _body(g, [(0.2, b"x" * 100, True)] * 5)
    assert isinstance(said, TooSlow) and "longer than 0.5 s" in said.detail
