"""`narrate run`'s private queues (jobs/queue/runs.py): a redo of a run's job goes to the workers'
queue and runs; a run killed mid-job (SIGKILL) leaves its job listed (`list`, `info`), resumable
into the workers' queue by its id, and cleared by the next run on its host, which continues from
the checkpoints."""

from __future__ import annotations

import json
import signal
import subprocess

from helpers.books import book
from helpers.fake import fake_env, synthesized, wait_synthesized
from helpers.procs import NARRATE, narrate, wait_for_job
from narrate.jobs.queue.runs import OWNERS
from narrate.jobs.server.connection import Connection
from narrate.jobs.settings import Settings

N = 24


def _listed(e: dict) -> list[dict]:
    proc = narrate(e, "list", "--json")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]  # one JSON object a line


def _killed_run(e: dict, home, voice_wav) -> tuple[list, str]:
    doc = home / "book.txt"
    doc.write_text(book(N))
    args = ["run", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "book.mp3"), "--here"]
    proc = subprocess.Popen([*NARRATE, *args], env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_synthesized(home, 8)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    [row] = [r for r in _listed(e) if r["status"] == "started"]
    return args, row["id"]


def test_a_killed_run_is_listed_and_the_next_run_clears_it_and_continues(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=60)
    args, job_id = _killed_run(e, home, voice_wav)
    done = len(synthesized(home))
    info = json.loads(narrate(e, "info", "--json").stdout)
    assert any(q["name"].startswith("narrate-run-") and q["started"] == 1 for q in info["queues"]), info["queues"]
    again = narrate(e, *args)
    assert again.returncode == 0, again.stderr[-2000:]
    again_synthesized = len(synthesized(home)) - done
    assert again_synthesized <= N - done + 4  # from the checkpoints: at most the batch in flight (4) again
    assert (home / "out" / "book.mp3").stat().st_size > 0
    assert job_id not in [r["id"] for r in _listed(e)]  # the dead run's queue and job went
    with Connection(Settings.from_env()) as conn:  # the env fixture set this test's server in os.environ
        assert conn.redis.hlen(OWNERS) == 0
    assert 0 < done < N


def test_a_killed_runs_job_resumed_by_its_id_runs_on_the_workers_queue(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=60, NARRATE_HEARTBEAT_S="1", NARRATE_ABANDONED_GRACE_S="0")
    _, job_id = _killed_run(e, home, voice_wav)
    resumed = narrate(e, "resume", job_id)
    for _ in range(20):  # its worker counts as gone after 3 missed beats of 1 s
        if "requeued" in resumed.stdout:
            break
        subprocess.run(["sleep", "0.5"], check=True)
        resumed = narrate(e, "resume", job_id)
    assert "requeued" in resumed.stdout, resumed.stdout + resumed.stderr
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    st = wait_for_job(job_id)
    assert st["status"] == "finished" and len(synthesized(home)) <= N + 4, st  # the batch in flight at most again


def test_a_redo_of_a_run_job_goes_to_the_workers_queue(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=0)
    doc = home / "short.txt"
    doc.write_text(book(6))
    ran = narrate(e, "run", str(doc), "--voice", str(voice_wav), "-o", str(home / "out" / "short.mp3"), "--json")
    assert ran.returncode == 0, ran.stderr[-2000:]
    old = json.loads(ran.stdout)["id"]
    redo = narrate(e, "redo", old, "2", "--json")
    assert redo.returncode == 0, redo.stderr
    new = json.loads(redo.stdout)["id"]
    [row] = [r for r in _listed(e) if r["id"] == new]
    assert row["status"] == "queued"
    assert narrate(e, "worker", "--burst", "--quiet").returncode == 0
    assert wait_for_job(new)["status"] == "finished"
