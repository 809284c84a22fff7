"""The host lock's scope (docs/crash-safety.md#the-host-lock): unless NARRATE_LOCK_PATH names it, a
machine with only CPUs gives each home its own lock, so `narrate run` of one home never waits for
another home's worker; and whoever waits for a lock says who holds it, its pid and its home."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from helpers.fake import fake_env
from helpers.procs import NARRATE, start_worker, stop_worker, wait_until
from helpers.web import remove_home


@pytest.fixture
def other_home(checkpoint):
    d = Path(tempfile.mkdtemp(prefix="nh-", dir="/tmp"))  # short: unix socket paths are limited
    (d / "out").mkdir()
    yield d
    remove_home(d)


def _env_of(env: dict, home: Path, **extra: str) -> dict:
    e = {k: v for k, v in fake_env(env, home, delay_ms=0).items() if k != "NARRATE_LOCK_PATH"}
    e.update(NARRATE_HOME=str(home), NARRATE_OUTPUT_DIR=str(home / "out"), NARRATE_FAKE_LOG=str(home / "fake.log"))
    e.update(extra)
    return e


def _holding(lock: Path) -> str:
    """The owner line once a worker holds the lock at `lock`."""
    owner = lock.with_name(lock.name + ".owner")
    return wait_until(
        lambda: owner.is_file() and "narrate worker" in owner.read_text() and owner.read_text(),
        90,
        f"a worker holding {lock}",
    )


def _run(e: dict, home: Path, voice: Path) -> subprocess.Popen:
    doc = home / "short.txt"
    doc.write_text("A short document.")
    return subprocess.Popen(
        [*NARRATE, "run", str(doc), "--voice", str(voice), "-o", str(home / "out" / "short.wav")],
        env=e,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_on_cpus_alone_run_of_one_home_does_not_wait_for_another_homes_worker(
    env, home, other_home, voice_wav, tmp_path
):
    tmp = tmp_path / "tmp"  # the default lock of a machine with a GPU would lie here ($TMPDIR)
    tmp.mkdir()
    a, b = _env_of(env, home, TMPDIR=str(tmp)), _env_of(env, other_home, TMPDIR=str(tmp))
    worker = start_worker(a)
    try:
        assert "narrate worker" in _holding(home / "host.lock")
        proc = _run(b, other_home, voice_wav)
        try:
            _out, err = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            _out, err = proc.communicate()
            raise AssertionError(f"narrate run of another home waited for the worker: {err}") from None
        assert proc.returncode == 0 and "waiting for the host lock" not in err, err
        assert (other_home / "out" / "short.wav").is_file()
        assert (other_home / "host.lock").exists() and not (tmp / "narrate-host.lock").exists()
    finally:
        stop_worker(worker)


def test_run_waiting_for_a_shared_lock_names_its_holders_pid_and_home(env, home, other_home, voice_wav, tmp_path):
    lock = tmp_path / "shared.lock"
    a, b = _env_of(env, home, NARRATE_LOCK_PATH=str(lock)), _env_of(env, other_home, NARRATE_LOCK_PATH=str(lock))
    worker = start_worker(a)
    proc = None
    try:
        owner = _holding(lock)
        pid = int(owner.split()[1].rstrip(":"))
        proc = _run(b, other_home, voice_wav)
        said: list[str] = []

        def waiting() -> bool:
            said.append(proc.stderr.readline())
            return "waiting for the host lock" in said[-1]

        wait_until(waiting, 90, "the waiting message")
        assert f"held by pid {pid}: narrate worker of home {home}" in said[-1], said
        assert proc.poll() is None  # it waits, having said so
        stop_worker(worker)
        _out, err = proc.communicate(timeout=90)
        assert proc.returncode == 0, err
    finally:
        stop_worker(worker)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_the_lock_is_the_gpus_on_metal_and_cuda_the_homes_on_cpus(monkeypatch, tmp_path):
    from narrate.jobs.settings import Settings
    from narrate.worker.process import host

    monkeypatch.delenv("NARRATE_LOCK_PATH", raising=False)
    monkeypatch.setenv("NARRATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tempfile.tempdir = None  # read TMPDIR again
    try:
        s = Settings.from_env()
        for acc in ("metal", "cuda"):
            monkeypatch.setattr(host, "accelerator", lambda acc=acc: acc)
            assert host.lock_path(s) == Path(tempfile.gettempdir()) / "narrate-host.lock"
        monkeypatch.setattr(host, "accelerator", lambda: "cpu")
        assert host.lock_path(s) == tmp_path / "home" / "host.lock"
        monkeypatch.setenv("NARRATE_LOCK_PATH", str(tmp_path / "mine.lock"))
        assert host.lock_path(Settings.from_env()) == tmp_path / "mine.lock"
    finally:
        tempfile.tempdir = None  # TMPDIR is restored after the test: read again then
