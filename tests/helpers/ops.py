"""Queue operations as the tests do them: submitting (JSON lines), a refused command's one error
line, a job's state and meta as Redis holds them, and a due-job mover standing in for the scheduler
loop."""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

from helpers.procs import narrate


def submit_json(env: dict, docs: list[Path], voice: Path, *extra: str, run=narrate) -> list[dict]:
    """`narrate submit DOCS --voice VOICE --json EXTRA`: one dict per job. `run`: how the command is
    run (helpers.procs.narrate, or helpers.cli.invoke in this process)."""
    proc = run(env, "submit", *map(str, docs), "--voice", str(voice), "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def submit(env: dict, doc: Path, voice: Path, out: Path, *extra: str, run=narrate) -> str:
    """One document to `out`: the job's id."""
    [job] = submit_json(env, [doc], voice, "-o", str(out), *extra, run=run)
    return job["id"]


def submit_book(env: dict, home: Path, voice: Path, text: str, name: str = "book") -> str:
    """`text` as HOME/NAME.txt, to HOME/out/NAME.wav: the job's id."""
    doc = home / f"{name}.txt"
    doc.write_text(text)
    return submit(env, doc, voice, home / "out" / f"{name}.wav")


def one_error_line(proc) -> str:
    """A refused command: exit 1, nothing on stdout, exactly one `Error: ...` line."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    assert proc.stdout == ""
    return lines[0]


def job_meta(r, job_id: str) -> dict:
    from rq.job import Job
    from rq.serializers import JSONSerializer

    return Job.fetch(job_id, connection=r, serializer=JSONSerializer).get_meta(refresh=True)


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
