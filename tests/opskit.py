"""Helpers for the queue-operation tests: documents, JSON-lines submits, the job's state as
Redis holds it, and a due-job mover standing in for the scheduler loop."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

from conftest import narrate
from faults import book

VOICE_ARGS = ("--voice",)


def write_docs(folder: Path, sentences: dict[str, int]) -> list[Path]:
    """One document per entry (relative file name -> number of sentences); no two documents share a
    sentence (so none reuses another's checkpoints)."""
    paths = []
    for name, n in sentences.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tag = "".join(c for c in name if c.isalnum())
        path.write_text(book(n).replace("Sentence number", f"In {tag} sentence"))
        paths.append(path)
    return paths


def submit_json(env: dict, docs: list[Path], voice: Path, *extra: str) -> list[dict]:
    proc = narrate(env, "submit", *map(str, docs), "--voice", str(voice), "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def one_error_line(proc) -> str:
    """A refused command: exit 1, nothing on stdout, exactly one `Error: ...` line."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    assert proc.stdout == ""
    return lines[0]


def rq_state(r, job_id: str) -> str | None:
    status = r.hget(f"rq:job:{job_id}", "status")
    return status.decode() if status else None


def registries_holding(r, job_id: str, queue: str = "narrate") -> list[str]:
    """Which of the queue's registries (and the queue list itself) hold this job."""
    held = []
    for kind in ("scheduled", "wip", "finished", "failed", "canceled"):
        members = [m.decode().split(":")[0] for m in r.zrange(f"rq:{kind}:{queue}", 0, -1)]
        if job_id in members:
            held.append(kind)
    if job_id.encode() in r.lrange(f"rq:queue:{queue}", 0, -1):
        held.append("queue")
    return held


def narrate_keys(r) -> list[str]:
    return sorted(k.decode() for k in r.keys("*"))


@contextlib.contextmanager
def due_mover(url: str, base: str = "narrate", every_s: float = 0.2):
    """Moves due scheduled jobs into their queues while the block runs, as the scheduler does."""
    import redis
    from narrate.jobs.queue.due import enqueue_due
    from narrate.jobs.queue.queues import queue_names

    r = redis.Redis.from_url(url)
    stop = threading.Event()
    moved: list[str] = []

    def loop() -> None:
        while not stop.wait(every_s):
            moved.extend(enqueue_due(r, queue_names(base)))

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    try:
        yield moved
    finally:
        stop.set()
        t.join()
        r.close()
