"""A Redis server refusing every write (worker/process/refusals.py): which answers count, what to do
about each, and the supervisor's wait: a growing delay, capped, one log line per answer."""

from __future__ import annotations

import logging

import redis
from narrate.worker.process import refusals


def test_refused_writes_are_told_from_other_errors():
    assert refusals.refused_write(redis.ResponseError("NOREPLICAS Not enough good replicas to write.")) == (
        "NOREPLICAS Not enough good replicas to write."
    )
    piped = redis.ResponseError("Command # 1 (DEL rq:worker:x) of pipeline caused error: MISCONF Errors writing")
    assert refusals.refused_write(piped) == "MISCONF Errors writing"
    oom = redis.exceptions.OutOfMemoryError("command not allowed when used memory > 'maxmemory'.")
    assert refusals.refused_write(oom).startswith("OOM command not allowed")
    assert refusals.refused_write(redis.exceptions.ReadOnlyError("You can't write against a read only replica."))
    try:
        try:
            raise piped
        except redis.ResponseError:
            raise redis.exceptions.ExecAbortError("Transaction discarded because of previous errors.")  # noqa: B904
    except redis.RedisError as e:
        assert refusals.refused_write(e) == "MISCONF Errors writing"  # what the abort was raised from
    assert refusals.refused_write(redis.ResponseError("WRONGTYPE Operation against a key")) is None
    assert refusals.refused_write(redis.ConnectionError("refused")) is None
    assert "maxmemory" in refusals.what_to_do("OOM command not allowed")
    assert "primary" in refusals.what_to_do("READONLY You can't write")


def test_the_wait_grows_to_its_cap_and_says_each_answer_once(monkeypatch, caplog):
    answers = iter(["NOREPLICAS x"] * 8 + ["MISCONF y", None])
    monkeypatch.setattr(refusals, "probe", lambda settings: next(answers))
    slept: list[float] = []
    clock = [0.0]

    def sleep(s: float) -> None:
        slept.append(s)
        clock[0] += s

    monkeypatch.setattr(refusals.time, "monotonic", lambda: clock[0])
    with caplog.at_level(logging.INFO, logger="narrate.supervisor"):
        assert refusals.wait_for_writes(None, "NOREPLICAS x", lambda: False, sleep)  # type: ignore[arg-type]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines  # the first answer, the changed one, and the end
    assert "NOREPLICAS x" in lines[0] and "min-replicas-to-write" in lines[0] and "MISCONF y" in lines[1]
    assert lines[2] == "the Redis server accepts writes again: starting the worker"
    assert round(clock[0]) == sum(min(2.0**n, refusals.WAIT_MAX_S) for n in range(10))  # 1, 2, 4, ... 60, 60
    assert not refusals.wait_for_writes(None, "OOM z", lambda: True, sleep)  # type: ignore[arg-type]  # a stop ends it
