"""Every setting narrate has, in one place: flags override environment, environment overrides defaults."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from .errors import BadInput

QUANTS = ("bf16", "4bit", "6bit", "8bit")
DEFAULT_MODEL = "mlx-community/Qwen3-TTS-12Hz-1.7B-Base"
DEFAULT_QUEUE = "narrate"
SAMPLE_RATE = 24_000
SAMPLES_PER_FRAME = 1920  # 12.5 codec frames per second
FRAMES_PER_SECOND = SAMPLE_RATE / SAMPLES_PER_FRAME

# Input limits (hostile or accidental input never reaches the model whole).
MAX_DOCUMENT_BYTES = 20 * 1024 * 1024
MAX_SENTENCES = 200_000
MAX_SENTENCE_CHARS = 400
MAX_VOICE_BYTES = 50 * 1024 * 1024
MIN_VOICE_SECONDS = 1.0
MAX_VOICE_SECONDS = 60.0


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else None


def _env_int(name: str, default: int | None, minimum: int = 1) -> int | None:
    raw = _env(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadInput(f"{name}={raw!r} is not a whole number") from None
    if value < minimum:
        raise BadInput(f"{name}={raw!r} must be at least {minimum}")
    return value


def check_quant(quant: str | None) -> str | None:
    if quant is not None and quant not in QUANTS:
        raise BadInput(f"unknown quantization {quant!r}: choose one of {', '.join(QUANTS)}")
    return quant


@dataclass(frozen=True)
class Settings:
    """Resolved settings of one narrate process."""

    redis_url: str | None = None  # None: the embedded Valkey server under `home`
    home: Path = field(default_factory=lambda: Path.home() / ".narrate")
    output_dir: Path = field(default_factory=Path.home)
    model: str = DEFAULT_MODEL
    quant: str | None = None  # None: 6bit for hub ids on Apple silicon, bf16 elsewhere
    max_frames: int = 2048  # cap on codec frames per sentence (2048 frames = 164 s)
    batch_size: int | None = None  # None: chosen from the device (see narrate.worker.engine)
    runaway_retries: int = 1  # re-synthesize a sentence that never reached EOS, with a new seed
    queue: str = DEFAULT_QUEUE
    lock_path: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / "narrate-host.lock")
    sentence_pause_ms: int = 250
    paragraph_pause_ms: int = 750
    seed: int = 0
    ffmpeg: str | None = None  # None: the ffmpeg shipped by imageio-ffmpeg
    engine: str = "mlx"  # "fake": a deterministic tone generator, for fault tests only
    hang_timeout: int = 600  # seconds without synthesis progress before the supervisor kills a worker
    max_attempts: int = 3  # a job that crashed its worker this often fails for good
    heartbeat_s: int = 10  # how often a busy worker tells Redis it is alive
    dashboard_username: str | None = None
    dashboard_password: str | None = None
    dashboard_hosts: tuple[str, ...] = ()  # Host names it answers besides loopback and its bind address

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings from NARRATE_* environment variables; `overrides` (from flags) win when not None."""
        home = Path(_env("NARRATE_HOME") or Path.home() / ".narrate").expanduser()
        values: dict[str, object] = {
            "redis_url": _env("NARRATE_REDIS_URL"),
            "home": home,
            "output_dir": Path(_env("NARRATE_OUTPUT_DIR") or Path.home()).expanduser(),
            "model": _env("NARRATE_MODEL") or DEFAULT_MODEL,
            "quant": check_quant(_env("NARRATE_QUANT")),
            "max_frames": _env_int("NARRATE_MAX_FRAMES", 2048),
            "batch_size": _env_int("NARRATE_BATCH_SIZE", None),
            "runaway_retries": _env_int("NARRATE_RUNAWAY_RETRIES", 1, minimum=0),
            "queue": _env("NARRATE_QUEUE") or DEFAULT_QUEUE,
            "lock_path": Path(_env("NARRATE_LOCK_PATH") or Path(tempfile.gettempdir()) / "narrate-host.lock"),
            "sentence_pause_ms": _env_int("NARRATE_SENTENCE_PAUSE_MS", 250),
            "paragraph_pause_ms": _env_int("NARRATE_PARAGRAPH_PAUSE_MS", 750),
            "ffmpeg": _env("NARRATE_FFMPEG"),
            "engine": _env("NARRATE_ENGINE") or "mlx",
            "hang_timeout": _env_int("NARRATE_HANG_TIMEOUT", 600),
            "max_attempts": _env_int("NARRATE_MAX_ATTEMPTS", 3),
            "heartbeat_s": _env_int("NARRATE_HEARTBEAT_S", 10),
            "dashboard_username": _env("NARRATE_DASHBOARD_USERNAME"),
            "dashboard_password": _env("NARRATE_DASHBOARD_PASSWORD"),
            "dashboard_hosts": tuple(filter(None, (_env("NARRATE_DASHBOARD_HOSTS") or "").split(","))),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        check_quant(values["quant"])  # type: ignore[arg-type]
        if values["engine"] not in ("mlx", "fake"):
            raise BadInput(f"NARRATE_ENGINE={values['engine']!r}: use mlx (or fake, for tests)")
        return cls(**values)  # type: ignore[arg-type]

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]
