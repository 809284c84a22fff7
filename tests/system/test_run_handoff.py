"""`narrate run` beside a running `narrate worker` of its home (worker/process/handoff.py): the job is
handed to that worker instead of waiting for the host lock it holds, followed, and its output put
at -o (copied from the worker's output root when that is another); `--here` keeps it in this
process; Ctrl-C cancels a handed-off job; a worker that dies mid-job leaves the job to the run."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from helpers.books import book
from helpers.fake import fake_env, synthesized, wait_synthesized
from helpers.ops import submit_book
from helpers.procs import NARRATE, child_pid, stop_worker, wait_for_job, wait_until


class Run:
    """`narrate run ARGS` in a process of its own, its stderr read line by line as it comes."""

    def __init__(self, env: dict, *args: str) -> None:
        self.proc = subprocess.Popen(
            [*NARRATE, "run", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self.out = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    @property
    def err(self) -> str:
        return "\n".join(self.lines)

    def said(self, text: str, timeout: float = 60) -> str:
        """The first stderr line holding `text`, once it has come."""
        try:
            return wait_until(lambda: next((ln for ln in self.lines if text in ln), None), timeout, repr(text))
        except AssertionError as e:
            raise AssertionError(f"{e}; `narrate run` said: {self.err[-2000:]}") from None

    def wait(self, timeout: float = 90) -> int:
        try:
            self.proc.wait(timeout=timeout)  # stdout is short: it cannot fill the pipe
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"narrate run did not end within {timeout} s; it said: {self.err[-2000:]}") from None
        assert self.proc.stdout is not None
        self.out = self.proc.stdout.read()
        self._reader.join(timeout=10)
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _worker_ready(home: Path, worker: subprocess.Popen) -> int:
    """The pid of the worker process once it holds the host lock and is registered on the server."""
    owner = home / "host.lock.owner"
    pid = wait_until(lambda: (c := child_pid(home, worker)) and c[1], 90, "the worker process")
    wait_until(lambda: owner.is_file() and f"pid {pid}: narrate worker" in owner.read_text(), 90, "the host lock")
    from narrate.jobs.server.connection import Connection
    from narrate.jobs.settings import Settings
    from rq.serializers import JSONSerializer
    from rq.worker import Worker

    with Connection(Settings.from_env()) as conn:
        wait_until(
            lambda: any(w.pid == pid for w in Worker.all(connection=conn.redis, serializer=JSONSerializer)),
            60,
            "the worker to register",
        )
    return pid


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _jobs_of_queue(name: str) -> list[str]:
    """Ids of the jobs that ran from (or wait in) rq queue `name`."""
    from narrate.jobs.server.connection import Connection
    from narrate.jobs.settings import Settings
    from rq.job import Job

    with Connection(Settings.from_env()) as conn:
        r = conn.redis
        found = []
        for key in r.keys("rq:job:*"):
            origin = r.hget(key, "origin")
            if origin is not None and origin.decode() == name:
                found.append(key.decode().removeprefix(Job.redis_job_namespace_prefix))
        return found


def test_run_beside_an_idle_worker_hands_its_job_to_it_and_writes_o(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=0)
    doc = home / "short.txt"
    doc.write_text(book(6))
    out = home / "out" / "short.wav"
    worker = subprocess.Popen([*NARRATE, "worker"], env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        pid = _worker_ready(home, worker)
        run = Run(e, str(doc), "--voice", str(voice_wav), "-o", str(out))
        rc = run.wait(timeout=60)  # today's `run` waited for the worker's lock until the worker stopped
        assert rc == 0, run.err
    finally:
        log = stop_worker(worker)
    handed = (
        f"handing this job to the running worker {pid} on {socket.gethostname()} (queue narrate-high); "
        "its progress follows"
    )
    assert handed in run.err, run.err
    assert "waiting for the host lock" not in run.err, run.err
    assert run.out.strip() == str(out)
    assert out.is_file() and out.stat().st_size > 0
    assert {p for _, p in synthesized(home)} == {pid}, "the worker synthesized every sentence"
    [job_id] = _jobs_of_queue("narrate-high")
    assert job_id in log
    st = wait_for_job(job_id, timeout=10)
    assert st["status"] == "finished" and st["result"]["output"] == str(out.resolve())


def test_run_here_beside_a_worker_waits_for_its_lock(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=0)
    doc = home / "short.txt"
    doc.write_text(book(4))
    out = home / "out" / "here.wav"
    worker = subprocess.Popen([*NARRATE, "worker"], env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = None
    try:
        pid = _worker_ready(home, worker)
        run = Run(e, str(doc), "--voice", str(voice_wav), "-o", str(out), "--here")
        line = run.said("waiting for the host lock", timeout=60)
        assert f"held by pid {pid}: narrate worker" in line and "--here" in line, line
        assert run.proc.poll() is None and not out.exists()  # it waits, having said so
        stop_worker(worker)
        assert run.wait(timeout=60) == 0, run.err
    finally:
        stop_worker(worker)
        if run is not None:
            run.kill()
    assert "handing this job" not in run.err
    assert out.is_file()
    assert {p for _, p in synthesized(home)} == {run.proc.pid}, "synthesized by `narrate run` itself"
    assert _jobs_of_queue("narrate-high") == []


def test_ctrl_c_of_a_handed_off_run_cancels_its_job(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=150)
    doc = home / "long.txt"
    doc.write_text(book(40))
    out = home / "out" / "long.wav"
    worker = subprocess.Popen([*NARRATE, "worker"], env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = None
    try:
        pid = _worker_ready(home, worker)
        run = Run(e, str(doc), "--voice", str(voice_wav), "-o", str(out))
        run.said("handing this job to the running worker")
        wait_synthesized(home, 4)
        run.proc.send_signal(signal.SIGINT)
        assert run.wait(timeout=30) == 1, run.err
        [job_id] = _jobs_of_queue("narrate-high")
        st = wait_for_job(job_id, timeout=30)
        assert worker.poll() is None, "the worker goes on"
    finally:
        log = stop_worker(worker)
        if run is not None:
            run.kill()
    last = run.lines[-1]
    assert last.startswith("Error: interrupted; job ") and "handed to the worker, is " in last, run.err
    assert "run the same command again to continue from its checkpoints" in last, run.err
    assert st["status"] == "canceled", (st, log[-2000:])
    assert len(synthesized(home)) < 40 and {p for _, p in synthesized(home)} == {pid}
    assert not out.exists()


def test_output_the_worker_writes_under_another_output_root_lands_at_o(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=0)
    theirs = home / "worker-out"
    theirs.mkdir()
    doc = home / "short.txt"
    doc.write_text(book(6))
    out = home / "out" / "shelf" / "short.wav"
    worker = subprocess.Popen(
        [*NARRATE, "worker"],
        env=dict(e, NARRATE_OUTPUT_DIR=str(theirs)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        pid = _worker_ready(home, worker)
        run = Run(e, str(doc), "--voice", str(voice_wav), "-o", str(out), "--subtitles", "srt")
        assert run.wait(timeout=60) == 0, run.err
    finally:
        stop_worker(worker)
    assert "handing this job to the running worker" in run.err
    wrote = theirs / "shelf" / "short.wav"
    assert wrote.is_file() and out.is_file(), run.err
    assert _sha(out) == _sha(wrote)
    assert (out.with_suffix(".srt")).read_text() == wrote.with_suffix(".srt").read_text()
    assert f"the worker wrote {wrote}" in run.err and str(out) in run.err, run.err
    assert run.out.strip() == str(out)
    assert {p for _, p in synthesized(home)} == {pid}
    assert not [p.name for p in out.parent.iterdir() if p.name.startswith(".")], "no temp file left"


def test_run_queued_behind_a_busy_worker_says_where_it_stands(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=150)
    other = submit_book(e, home, voice_wav, book(60), name="other")
    doc = home / "short.txt"
    doc.write_text(book(3))
    out = home / "out" / "short.wav"
    worker = subprocess.Popen([*NARRATE, "worker"], env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _worker_ready(home, worker)
        wait_synthesized(home, 2)
        run = Run(e, str(doc), "--voice", str(voice_wav), "-o", str(out))
        line = run.said("the worker is busy with job")
        assert run.wait(timeout=90) == 0, run.err
        first = wait_for_job(other, timeout=10)
    finally:
        stop_worker(worker)
    assert line.startswith(f"the worker is busy with job {other} (other.txt, ") and line.endswith(
        "sentences); this job starts after it"
    ), line
    [mine] = _jobs_of_queue("narrate-high")
    st = wait_for_job(mine, timeout=10)
    assert first["ended_at"] <= st["started_at"], (first, st)
    assert out.is_file()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["killed", "stopped"])
def test_a_worker_gone_mid_job_leaves_the_job_to_the_run(env, home, voice_wav, sig):
    """The whole `narrate worker` (supervisor and worker process) killed, or stopped (its job requeued
    after the batch in flight): no supervisor will start it again, so the run takes the job back (from
    the dead worker, or from the worker's queue) and finishes it here, from its checkpoints."""
    e = fake_env(env, home, delay_ms=100)
    doc = home / "long.txt"
    doc.write_text(book(24))
    out = home / "out" / "long.wav"
    worker = subprocess.Popen(
        [*NARRATE, "worker"], env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    run = None
    try:
        pid = _worker_ready(home, worker)
        run = Run(e, str(doc), "--voice", str(voice_wav), "-o", str(out))
        run.said("handing this job to the running worker")
        wait_synthesized(home, 8)
        os.killpg(worker.pid, sig)
        worker.communicate(timeout=60)
        assert run.wait(timeout=90) == 0, run.err
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.communicate()
        if run is not None:
            run.kill()
    assert "this job continues here, from its checkpoints" in run.err, run.err
    assert out.is_file()
    by = {p for _, p in synthesized(home)}
    assert by == {pid, run.proc.pid}, by
    done = sorted(i for i, _ in synthesized(home))
    assert set(done) == set(range(24)) and len(done) < 24 + 8, "the run went on from the worker's checkpoints"


def test_a_worker_process_its_supervisor_restarts_keeps_the_job(env, home, voice_wav):
    """Only the worker process killed: its supervisor starts it again, the new process takes the job
    back (as after any crash) and the run follows it there."""
    e = fake_env(env, home, delay_ms=100)
    doc = home / "long.txt"
    doc.write_text(book(40))
    out = home / "out" / "long.wav"
    worker = subprocess.Popen([*NARRATE, "worker"], env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = None
    try:
        pid = _worker_ready(home, worker)
        run = Run(e, str(doc), "--voice", str(voice_wav), "-o", str(out))
        run.said("handing this job to the running worker")
        wait_synthesized(home, 8)
        os.kill(pid, signal.SIGKILL)
        line = run.said("following the worker's new process")
        assert run.wait(timeout=90) == 0, run.err
    finally:
        stop_worker(worker)
        if run is not None:
            run.kill()
    new = int(line.split("process ")[1].split()[0])
    assert new != pid and "continues here" not in run.err, run.err
    assert {p for _, p in synthesized(home)} == {pid, new}
    assert out.is_file()
