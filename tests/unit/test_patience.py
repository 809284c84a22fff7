"""Workers ride out a Redis outage as long as NARRATE_REDIS_PATIENCE_S says; the CLI does not."""

from __future__ import annotations

import pytest
import redis
import redis.retry
from narrate.jobs.server.connection import _retry


def waited(retry, monkeypatch) -> float:
    """Seconds of back-off before the retries run out, from the retry's own policy: run a command
    that always fails and add up the sleeps it asks for."""
    slept: list[float] = []
    monkeypatch.setattr(redis.retry, "sleep", slept.append)

    def failing():
        raise redis.ConnectionError("down")

    with pytest.raises(redis.ConnectionError):
        retry.call_with_retry(failing, lambda _e: None)
    return sum(slept)


@pytest.mark.parametrize("patience", [0, 30, 120, 600])
def test_patient_connections_wait_as_long_as_the_setting(patience, monkeypatch):
    total = waited(_retry(True, patience), monkeypatch)
    assert patience <= total <= patience + 12, total


def test_the_cli_gives_up_within_seconds(monkeypatch):
    assert waited(_retry(False, 600), monkeypatch) < 2
