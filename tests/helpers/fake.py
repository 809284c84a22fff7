"""The fake engine (worker/testkit/fake_engine.py, NARRATE_ENGINE=fake): its environment and the log
of what it synthesized."""

from __future__ import annotations

from pathlib import Path

from helpers.procs import wait_until


def fake_env(env: dict, home: Path, delay_ms: int = 20, **extra: str) -> dict:
    e = dict(env)
    e.update(
        NARRATE_ENGINE="fake",
        NARRATE_FAKE_DELAY_MS=str(delay_ms),
        NARRATE_FAKE_LOG=str(home / "fake.log"),
        NARRATE_BATCH_SIZE="4",
        NARRATE_HANG_TIMEOUT="600",
    )
    e.update(extra)
    return e


def synthesized(home: Path) -> list[tuple[int, int]]:
    """(sentence index, pid) for every sentence the fake engine synthesized."""
    log = home / "fake.log"
    if not log.exists():
        return []
    return [tuple(map(int, line.split())) for line in log.read_text().split("\n") if line]


def wait_synthesized(home: Path, n: int, timeout: float = 60) -> None:
    wait_until(lambda: len(synthesized(home)) >= n, timeout, f"{n} sentences synthesized", poll=0.02)
