"""Fixtures and hooks (the helpers the tests share are in helpers/): tiny random-weight Qwen3-TTS
checkpoints built by the tests in the real on-disk layout (Base, CustomVoice, VoiceDesign), a
synthetic voice, isolated
narrate homes, the embedded server and the external Redis (a DB of
its own on 127.0.0.1:6379, or NARRATE_TEST_REDIS_URL; flushed). Every test under system/ and bench/ is marked slow:
`pytest -m "not slow"` runs the in-process tests of unit/."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from pathlib import Path

import narrate.worker  # noqa: F401 - first: see below
import pytest
import redis
from helpers.audio import write_voice
from helpers.chromium import SKIP_REASON, find_chromium, launch_args
from helpers.servers import external_redis_url

# narrate.worker, imported above before anything imports mlx, loads the system OpenBLAS where there is
# one (narrate/worker/blas.py), as the worker processes the tests start do: audio synthesized in the test
# process then has the same float rounding as theirs.
TESTS = Path(__file__).resolve().parent
SLOW_FOLDERS = (TESTS / "system", TESTS / "bench")


def pytest_collection_modifyitems(config, items):
    """Mark slow what starts processes, servers or browsers, sends signals, runs the real engine for
    long or measures (system/, bench/)."""
    for item in items:
        if any(Path(item.path).resolve().is_relative_to(folder) for folder in SLOW_FOLDERS):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def session_dir():
    d = Path(tempfile.mkdtemp(prefix="nrt-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def checkpoint(session_dir) -> Path:
    from narrate.worker.testkit.random_checkpoint import write_checkpoint

    return write_checkpoint(session_dir / "tiny-ckpt", size="tiny", dtype="bfloat16", seed=0)


@pytest.fixture(scope="session")
def custom_voice_checkpoint(session_dir) -> Path:
    """A tiny CustomVoice checkpoint: the nine published preset speakers, no speaker encoder."""
    from narrate.worker.testkit.random_checkpoint import write_checkpoint

    return write_checkpoint(
        session_dir / "tiny-custom-voice", size="tiny", dtype="bfloat16", seed=0, kind="custom-voice"
    )


@pytest.fixture(scope="session")
def voice_design_checkpoint(session_dir) -> Path:
    """A tiny VoiceDesign checkpoint: voices from a description, no speakers, no speaker encoder."""
    from narrate.worker.testkit.random_checkpoint import write_checkpoint

    return write_checkpoint(
        session_dir / "tiny-voice-design", size="tiny", dtype="bfloat16", seed=0, kind="voice-design"
    )


@pytest.fixture(scope="session")
def asr_checkpoint(session_dir, checkpoint) -> Path:
    """A tiny random-weight Qwen3-ASR checkpoint, the tiny TTS checkpoint's tokenizer: the proof pass's recognizer
    (it hears garbage)."""
    from narrate.worker.testkit.random_checkpoint.asr import write_asr_checkpoint

    return write_asr_checkpoint(session_dir / "tiny-asr", tokenizer_from=checkpoint)


@pytest.fixture(scope="session")
def parakeet_checkpoint(session_dir) -> Path:
    """A tiny random-weight Parakeet TDT checkpoint: the family of the proof pass's default English recognizer,
    heard take by take (it hears garbage)."""
    from narrate.worker.testkit.random_checkpoint.parakeet import write_parakeet_checkpoint

    return write_parakeet_checkpoint(session_dir / "tiny-parakeet")


@pytest.fixture(scope="session")
def aligner_checkpoint(session_dir, checkpoint) -> Path:
    """A tiny random-weight Qwen3-ForcedAligner checkpoint, the tiny TTS checkpoint's tokenizer: the word timings'
    aligner (its timings are meaningless)."""
    from narrate.worker.testkit.random_checkpoint.aligner import write_aligner_checkpoint

    return write_aligner_checkpoint(session_dir / "tiny-aligner", tokenizer_from=checkpoint)


@pytest.fixture(scope="session")
def voice_wav(session_dir) -> Path:
    return write_voice(session_dir / "voice.wav")


@pytest.fixture
def home():
    """A short-path NARRATE_HOME (unix socket paths are limited to 107 bytes)."""
    d = Path(tempfile.mkdtemp(prefix="nh-", dir="/tmp"))
    yield d
    from narrate.jobs.server.embedded import EmbeddedServer

    pid = EmbeddedServer(d).server_pid()  # only a PID proven to be this home's server
    if pid:  # never leave a test's embedded server behind
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def env(home, checkpoint, monkeypatch) -> dict[str, str]:
    """Environment for narrate processes (and this one): embedded server, tiny model."""
    values = {
        "NARRATE_HOME": str(home),
        "NARRATE_OUTPUT_DIR": str(home / "out"),
        "NARRATE_LOCK_PATH": str(home / "host.lock"),
        "NARRATE_MODEL": str(checkpoint),
        "NARRATE_MAX_FRAMES": "6",
    }
    monkeypatch.delenv("NARRATE_REDIS_URL", raising=False)
    monkeypatch.delenv("NARRATE_QUANT", raising=False)
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    (home / "out").mkdir()
    full = dict(os.environ)
    full["PYTHONUNBUFFERED"] = "1"
    return full


@pytest.fixture
def external_redis(env, monkeypatch):
    """The external-server path: a real Redis, in a DB of this test process's own (helpers/servers.py
    `external_redis_url`: one told by NARRATE_TEST_REDIS_URL, else an empty one it claimed), flushed
    around the test."""
    url = external_redis_url()
    client = redis.Redis.from_url(url)
    client.ping()
    client.flushdb()
    monkeypatch.setenv("NARRATE_REDIS_URL", url)
    env["NARRATE_REDIS_URL"] = url
    yield client
    client.flushdb()
    client.close()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's browser: the installed Chromium (the test is skipped where there is none)."""
    if find_chromium() is None:
        pytest.skip(SKIP_REASON)
    return {**browser_type_launch_args, **launch_args()}
