"""Every setting narrate has, in one place, each default written once.

Each field of ``Settings`` names its environment variable, who reads it (``client``: the host that submits; ``worker``:
the host that synthesizes; ``both``) and what it does; ``from_env`` and the table of docs/settings.md
(jobs/settings_table.py) are derived from that. Flags override the environment, which overrides the defaults. Fixed
facts of the audio format and input limits are constants below."""

from __future__ import annotations

import os
import tempfile
from dataclasses import MISSING, Field, dataclass, fields
from pathlib import Path
from typing import Any

from narrate.jobs.setting_values import QUANTS as QUANTS  # re-exported: the quantizations, checked by check_quant
from narrate.jobs.setting_values import check_quant, setting
from narrate.jobs.setting_values import choice as _choice
from narrate.jobs.setting_values import gigabytes as _gigabytes
from narrate.jobs.setting_values import names as _names
from narrate.jobs.setting_values import pairs as _pairs
from narrate.jobs.setting_values import path as _path
from narrate.jobs.setting_values import seconds as _seconds
from narrate.jobs.setting_values import text as _str
from narrate.jobs.setting_values import url as _url
from narrate.jobs.setting_values import whole as _int

ENGINES = ("mlx", "fake")
BLAS_CHOICES = ("auto", "numpy", "bundled")
DEFAULT_MODEL = "mlx-community/Qwen3-TTS-12Hz-1.7B-Base"
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
MAX_PAUSE_MS = 60_000  # a pause of a minute at most (sentence, paragraph, chapter)
MAX_FRAMES_CAP = 65_536  # codec frames per sentence: 87 minutes

DAY_S = 24 * 3600

CLIENT, WORKER, BOTH = "client", "worker", "both"


@dataclass(frozen=True)
class Settings:
    """Resolved settings of one narrate process."""

    redis_url: str | None = setting(
        "NARRATE_REDIS_URL", None, reads=BOTH, shown="unset",
        doc="Redis/Valkey to use. Unset: the embedded Valkey server. Passwords are never printed.",
    )  # fmt: skip
    home: Path = setting(
        "NARRATE_HOME", reads=BOTH, parse=_path, factory=lambda: Path.home() / ".narrate", shown="`~/.narrate`",
        doc="Data dir (mode 0700, yours only): the embedded server's socket, AOF and log, sentence checkpoints, "
        "and the scratch space where a book is stitched and encoded while it is synthesized (m4a/m4b: its encoded "
        "segments, about 45 MB an hour of audio; other formats: its uncompressed WAV, about 170 MB an hour; plus the "
        "output file while it is written).",
    )  # fmt: skip
    output_dir: Path = setting(
        "NARRATE_OUTPUT_DIR", reads=BOTH, parse=_path, factory=Path.home, shown="`~`",
        doc="Output root: outputs must lie under it, a relative `-o` and the default output name are taken from it; "
        "jobs store paths relative to it. `run` uses its output file's directory instead.",
    )  # fmt: skip
    model: str = setting(
        "NARRATE_MODEL", DEFAULT_MODEL, reads=BOTH,
        doc="Hugging Face id or local checkpoint dir for jobs submitted without `--model`.",
    )  # fmt: skip
    quant: str | None = setting(
        "NARRATE_QUANT", None, reads=WORKER, parse=lambda n, raw: check_quant(raw), shown="by model",
        doc="`bf16`, `4bit`, `6bit`, `8bit` or `float32` for jobs submitted without `--quant`; see Models.",
    )  # fmt: skip
    max_frames: int = setting(
        "NARRATE_MAX_FRAMES", 2048, reads=CLIENT, parse=_int(1, MAX_FRAMES_CAP),
        doc="Cap on codec frames per sentence (12.5 frames = 1 s); part of the job (`--max-frames`). Each "
        "sentence's budget is 2 s + 2.5x its estimated speaking time (by script: ~4.5 CJK characters, ~7 kana, "
        "~6.5 Hangul syllables or ~15 Latin letters a second; digits and symbols read as words; pauses at "
        "punctuation; see `jobs/documents/budgets.py`), capped by this.",
    )  # fmt: skip
    seed: int = setting(
        "NARRATE_SEED", 0, reads=CLIENT, parse=_int(0),
        doc="Sampling seed of the job (`--seed`); each sentence's seed derives from it and the text.",
    )  # fmt: skip
    sentence_pause_ms: int = setting(
        "NARRATE_SENTENCE_PAUSE_MS", 250, reads=CLIENT, parse=_int(0, MAX_PAUSE_MS),
        doc="Silence between sentences; part of the job.",
    )  # fmt: skip
    paragraph_pause_ms: int = setting(
        "NARRATE_PARAGRAPH_PAUSE_MS", 750, reads=CLIENT, parse=_int(0, MAX_PAUSE_MS),
        doc="Silence between paragraphs; part of the job.",
    )  # fmt: skip
    chapter_pause_ms: int = setting(
        "NARRATE_CHAPTER_PAUSE_MS", 2000, reads=CLIENT, parse=_int(0, MAX_PAUSE_MS),
        doc="Silence before a chapter; part of the job.",
    )  # fmt: skip
    speaker_pause_ms: int = setting(
        "NARRATE_SPEAKER_PAUSE_MS", 500, reads=CLIENT, parse=_int(0, MAX_PAUSE_MS),
        doc="Silence where a cast's voice changes within a paragraph (at least; a paragraph's or chapter's "
        "own pause if longer); part of the job.",
    )  # fmt: skip
    batch_size: int | None = setting(
        "NARRATE_BATCH_SIZE", None, reads=WORKER, parse=_int(1), shown="by device",
        doc="Sentences synthesized together: 16 on a GPU, 8 on a CPU, fewer if their worst-case KV caches "
        "would not fit in a quarter of the device memory.",
    )  # fmt: skip
    runaway_retries: int = setting(
        "NARRATE_RUNAWAY_RETRIES", 1, reads=BOTH, parse=_int(0),
        doc="Times a sentence that used its whole frame budget without ending is synthesized again with a "
        "new seed (the client sizes the job timeout for it).",
    )  # fmt: skip
    proof_model: str | None = setting(
        "NARRATE_PROOF_MODEL", None, reads=WORKER, shown="by language",
        doc="Recognizer for `--proof` with no model: an mlx-audio STT model, hub id or local dir (see docs/proof.md).",
    )  # fmt: skip
    align_model: str = setting(
        "NARRATE_ALIGN_MODEL", "mlx-community/Qwen3-ForcedAligner-0.6B-8bit", reads=WORKER,
        doc="Forced aligner for `--word-timings` with no model: hub id or local dir (see docs/readalong.md).",
    )  # fmt: skip
    proof_max_wer: float = setting(
        "NARRATE_PROOF_MAX_WER", 0.25, reads=WORKER, parse=_seconds(0.0, "word error rate"), shown="`0.25`",
        doc="Proof: a take whose word error rate (against the sentence as spoken) is above this is flagged.",
    )  # fmt: skip
    proof_ending_words: int = setting(
        "NARRATE_PROOF_ENDING_WORDS", 2, reads=WORKER, parse=_int(1),
        doc="Proof: a take missing all of the sentence's last this many words has lost its ending (flagged).",
    )  # fmt: skip
    proof_tail_words: int = setting(
        "NARRATE_PROOF_TAIL_WORDS", 3, reads=WORKER, parse=_int(1),
        doc="Proof: this many words or more heard after the sentence's last word are a made-up tail (flagged).",
    )  # fmt: skip
    proof_rate_factor: float = setting(
        "NARRATE_PROOF_RATE_FACTOR", 1.8, reads=WORKER, parse=_seconds(1.0, "times"), shown="`1.8`",
        doc="Proof: a take spoken this many times slower or faster than its voice's norm (words a second) is flagged.",
    )  # fmt: skip
    proof_max_silence_s: float = setting(
        "NARRATE_PROOF_MAX_SILENCE_S", 1.5, reads=WORKER, parse=_seconds(0.1), shown="`1.5`",
        doc="Proof: a take with a silence longer than this between its first and last sound is flagged.",
    )  # fmt: skip
    queue: str = setting(
        "NARRATE_QUEUE", "narrate", reads=BOTH,
        doc="Queue that `submit` uses and `worker` takes from (`--queue`), with `NAME-high` and `NAME-low` for "
        "`--priority`.",
    )  # fmt: skip
    lock_path: Path = setting(
        "NARRATE_LOCK_PATH", reads=WORKER, parse=_path, shown="by accelerator",
        factory=lambda: Path(tempfile.gettempdir()) / "narrate-host.lock",
        doc="The host lock file, held by the worker (or `narrate run`) that synthesizes. Unset: on Metal or an "
        "NVIDIA GPU `$TMPDIR/narrate-host.lock`, shared by every home of the machine (two workers never share "
        "the GPU); on a machine with only CPUs `$NARRATE_HOME/host.lock`, one per home. Set it to share one "
        "lock otherwise.",
    )  # fmt: skip
    ffmpeg: str | None = setting(
        "NARRATE_FFMPEG", None, reads=BOTH, shown="imageio-ffmpeg's",
        doc="The ffmpeg binary for reading voices and encoding outputs (no system ffmpeg is needed).",
    )  # fmt: skip
    hang_timeout: int = setting(
        "NARRATE_HANG_TIMEOUT", 600, reads=WORKER, parse=_int(1),
        doc="Seconds a busy worker may go without progress before its supervisor kills it.",
    )  # fmt: skip
    max_attempts: int = setting(
        "NARRATE_MAX_ATTEMPTS", 3, reads=BOTH, parse=_int(1),
        doc="Crashes in a row on the same batch (worker), and attempts after exceptions (set at submit), "
        "before a job fails for good.",
    )  # fmt: skip
    heartbeat_s: int = setting(
        "NARRATE_HEARTBEAT_S", 10, reads=WORKER, parse=_int(1),
        doc="How often a busy worker refreshes its liveness in Redis; `resume` treats a started job as "
        "abandoned after 3 missed beats of its worker (the interval is recorded in the job).",
    )  # fmt: skip
    abandoned_grace_s: int = setting(
        "NARRATE_ABANDONED_GRACE_S", 30, reads=WORKER, parse=_int(0),
        doc="Added to 3 missed heartbeats before a started job counts as abandoned (`resume`; a part of a fanned-out "
        "book is then taken over by another host's scheduler); recorded in the job by the worker running it.",
    )  # fmt: skip
    keep_days: int = setting(
        "NARRATE_KEEP_DAYS", 30, reads=CLIENT, parse=_int(1),
        doc="Days a finished or failed job (its status, result and stored document and voice) is kept.",
    )  # fmt: skip
    redis_patience_s: int = setting(
        "NARRATE_REDIS_PATIENCE_S", 120, reads=WORKER, parse=_int(0),
        doc="How long a worker retries Redis commands through an outage (the CLI gives up within seconds).",
    )  # fmt: skip
    model_cache_size: int = setting(
        "NARRATE_MODEL_CACHE", 2, reads=WORKER, parse=_int(1),
        doc="Loaded models a worker keeps warm, keyed by (model, quantization); the oldest is dropped.",
    )  # fmt: skip
    dashboard_username: str | None = setting(
        "NARRATE_DASHBOARD_USERNAME", None, reads=CLIENT, shown="unset",
        doc="Basic-auth user for `narrate dashboard` (required off loopback, with the password).",
    )  # fmt: skip
    dashboard_password: str | None = setting(
        "NARRATE_DASHBOARD_PASSWORD", None, reads=CLIENT, shown="unset",
        doc="Basic-auth password for `narrate dashboard`.",
    )  # fmt: skip
    dashboard_hosts: tuple[str, ...] = setting(
        "NARRATE_DASHBOARD_HOSTS", (), reads=CLIENT, shown="unset",
        parse=lambda _n, raw: tuple(h.strip() for h in raw.split(",") if h.strip()),
        doc="Comma-separated extra host names `narrate dashboard` answers (besides loopback and `--bind`): "
        "`name:port` exactly, or a bare `name` on the dashboard's port and bare (behind a proxy). Pages on "
        "these names may also post to it.",
    )  # fmt: skip
    clip_yield_s: float = setting(
        "NARRATE_CLIP_YIELD_S", 10.0, reads=WORKER, parse=_seconds(0.0), shown="`10`",
        doc="A book (or part) that has run this many seconds on a worker yields it to clip jobs waiting on the "
        "high-priority queue (`POST /v1/audio/speech`, voice previews) that no idle worker took: it ends after its "
        "batch in flight, goes back to the front of its queue and continues from its checkpoints once they are "
        "spoken. `0`: never. A clip for the model the book has loaded does not wait for this: it joins the "
        "book's batches (see `NARRATE_CLIP_RIDE`).",
    )  # fmt: skip
    clip_ride: int = setting(
        "NARRATE_CLIP_RIDE", 1, reads=WORKER, parse=_int(0, 1),
        doc="`1`: a clip job (`POST /v1/audio/speech`, a voice preview) for the model a running book has loaded joins "
        "the book's batches at the next free slot, ahead of the book's next sentences, and the book goes on. `0`: it "
        "never does (the book yields instead, after `NARRATE_CLIP_YIELD_S`).",
    )  # fmt: skip
    api_key: str | None = setting(
        "NARRATE_API_KEY", None, reads=CLIENT, shown="unset",
        doc="The key of `narrate serve`'s HTTP API: once set, every request needs `Authorization: Bearer KEY`, on "
        "loopback too; required to serve on any address but loopback. Never printed.",
    )  # fmt: skip
    serve_hosts: tuple[str, ...] = setting(
        "NARRATE_SERVE_HOSTS", (), reads=CLIENT, shown="unset", parse=_names,
        doc="Comma-separated extra host names `narrate serve` answers (besides loopback and `--bind`), as "
        "`NARRATE_DASHBOARD_HOSTS` for the dashboard; pages on these names may also post to it.",
    )  # fmt: skip
    callback_hosts: tuple[str, ...] = setting(
        "NARRATE_CALLBACK_HOSTS", (), reads=CLIENT, shown="unset", parse=_names,
        doc="Comma-separated hosts (`name` or `name:port`) a narration's `callback_url` may name; unset: no "
        "callbacks (the API posts to no host nobody listed).",
    )  # fmt: skip
    callback_host_concurrency: int = setting(
        "NARRATE_CALLBACK_HOST_CONCURRENCY", 2, reads=CLIENT, parse=_int(1, 64),
        doc="Callbacks `narrate serve` sends to one host at once (each server; 16 to all hosts together): a slow "
        "host delays only its own.",
    )  # fmt: skip
    openai_voices: tuple[tuple[str, str], ...] = setting(
        "NARRATE_OPENAI_VOICES", (), reads=CLIENT, shown="unset", parse=_pairs,
        doc="OpenAI voice names for `POST /v1/audio/speech`, each mapped to a saved voice or preset speaker: "
        "`alloy=alice,onyx=ryan`. Unmapped OpenAI names are refused, saying so.",
    )  # fmt: skip
    library: str | None = setting(
        "NARRATE_LIBRARY", None, reads=CLIENT, shown="unset",
        doc="The audiobook library `narrate export` writes into when no `--library` is given (a folder "
        "Audiobookshelf or Plex watches).",
    )  # fmt: skip
    abs_url: str | None = setting(
        "NARRATE_ABS_URL", None, reads=BOTH, shown="unset",
        doc="An Audiobookshelf server to tell about exported books (the default of `--abs-url`): a scan of its "
        "library after an export into a folder it watches, else an upload of the book.",
    )  # fmt: skip
    abs_token: str | None = setting(
        "NARRATE_ABS_TOKEN", None, reads=BOTH, shown="unset",
        doc="The Audiobookshelf API token (of a user who may upload) used with `--abs-url`, on the host that "
        "exports (the worker's, for `submit --abs-url`). Never stored in Redis or printed.",
    )  # fmt: skip
    abs_library: str | None = setting(
        "NARRATE_ABS_LIBRARY", None, reads=BOTH, shown="unset",
        doc="The id of the Audiobookshelf library to scan or upload into; unset: its first book library.",
    )  # fmt: skip
    public_url: str = setting(
        "NARRATE_PUBLIC_URL", "http://127.0.0.1:8000", reads=CLIENT, parse=_url,
        doc="Where people and podcast apps reach `narrate serve` (scheme, host and port, as they type it): the "
        "feed URLs `narrate feed` prints begin with it. The server itself builds its feeds' links from the "
        "address each request came to.",
    )  # fmt: skip
    serve_stall_s: float = setting(
        "NARRATE_SERVE_STALL_S", 30.0, reads=CLIENT, parse=_seconds(0.1), shown="`30`",
        doc="Seconds `narrate serve` waits for the next piece of a request's body before it answers 408 and "
        "drops the request (a slow or stalled upload holds nothing longer).",
    )  # fmt: skip
    serve_min_rate_kib: int = setting(
        "NARRATE_SERVE_MIN_RATE_KIB", 32, reads=CLIENT, parse=_int(1),
        doc="The slowest average rate, in KiB/s, at which `narrate serve` takes a request's body once its first "
        "`NARRATE_SERVE_STALL_S` are past: a slower body is answered 408 and what it uploaded is removed (a byte "
        "now and then keeps nothing open).",
    )  # fmt: skip
    serve_body_s: float = setting(
        "NARRATE_SERVE_BODY_S", 3600.0, reads=CLIENT, parse=_seconds(1.0), shown="`3600`",
        doc="The longest a request's body may take to arrive in whole, however fast it comes (408 after).",
    )  # fmt: skip
    serve_header_s: float = setting(
        "NARRATE_SERVE_HEADER_S", 10.0, reads=CLIENT, parse=_seconds(0.5), shown="`10`",
        doc="Seconds a connection to `narrate serve` may wait to send a request's headers (a new connection, or "
        "one kept alive after a response) before it is closed.",
    )  # fmt: skip
    serve_connections: int = setting(
        "NARRATE_SERVE_CONNECTIONS", 512, reads=CLIENT, parse=_int(8),
        doc="Open connections `narrate serve` keeps; past it (or `NARRATE_SERVE_CLIENT_CONNECTIONS` of one address) a "
        "new one closes the longest idle, else the slowest body under `NARRATE_SERVE_MIN_RATE_KIB` of an address "
        "holding more than the new one's (else itself): idle sockets and trickling bodies never lock people out.",
    )  # fmt: skip
    serve_client_connections: int = setting(
        "NARRATE_SERVE_CLIENT_CONNECTIONS", 64, reads=CLIENT, parse=_int(2),
        doc="Open connections `narrate serve` keeps from one address (see `NARRATE_SERVE_CONNECTIONS`).",
    )  # fmt: skip
    serve_stream_s: float = setting(
        "NARRATE_SERVE_STREAM_S", 600.0, reads=CLIENT, parse=_seconds(1.0), shown="`600`",
        doc="The longest one event stream (`/v1/narrations/ID/events`) stays open; it then ends with a `retry` "
        "hint and the client reconnects (EventSource does by itself) for the next stretch.",
    )  # fmt: skip
    serve_client_streams: int = setting(
        "NARRATE_SERVE_CLIENT_STREAMS", 16, reads=CLIENT, parse=_int(1),
        doc="Event streams one address may hold open at once (429 past it).",
    )  # fmt: skip
    serve_submits_per_min: int = setting(
        "NARRATE_SERVE_SUBMITS_PER_MIN", 60, reads=CLIENT, parse=_int(1),
        doc="Requests that submit work (narrations, speech, voice uploads and designs, the New page) one address "
        "may make a minute; past it, 429 with `Retry-After`.",
    )  # fmt: skip
    serve_trusted_proxies: tuple[str, ...] = setting(
        "NARRATE_SERVE_TRUSTED_PROXIES", (), reads=CLIENT, shown="unset", parse=_names,
        doc="Comma-separated addresses of reverse proxies in front of `narrate serve` whose `X-Forwarded-For` and "
        "`X-Forwarded-Proto` it believes: the client's address (for the limits) and https (the session cookie is "
        "then `Secure`). Unset: those headers are ignored.",
    )  # fmt: skip
    scheduler_interval_s: float = setting(
        "NARRATE_SCHEDULER_INTERVAL_S", 5.0, reads=BOTH, parse=_seconds(0.05), shown="`5`",
        doc="How often the scheduler (in `narrate worker`'s supervisor, or `narrate scheduler`) moves due "
        "`--at`/`--in` jobs into their queue and runs due schedule ticks. A tick holds a lease of 5 times this "
        "in Redis, renewed while it runs: a scheduler killed mid-tick is replaced that much later.",
    )  # fmt: skip
    schedule_settle_s: float = setting(
        "NARRATE_SCHEDULE_SETTLE_S", 5.0, reads=BOTH, parse=_seconds(0.0), shown="`5`",
        doc="A watched document modified less than this many seconds ago is still being written: it waits for the "
        "next tick (one dated in the future, by another host's clock, waits until ticks have seen it unchanged "
        "this long).",
    )  # fmt: skip
    cache_max_gb: float = setting(
        "NARRATE_CACHE_MAX_GB", 5.0, reads=WORKER, parse=_gigabytes, shown="`5`",
        doc="Size cap of the sentence cache (finished sentences kept in `NARRATE_HOME/checkpoints` after their "
        "job, so a resubmitted or edited book synthesizes only what changed), in GB (10^9 bytes, fractions "
        "allowed). When a job ends the least recently used are evicted until the cache fits, never that job's "
        "own; `0`: each job deletes its checkpoints once its output is written. See `narrate cache`.",
    )  # fmt: skip
    fanout_max_mb: float = setting(
        "NARRATE_FANOUT_MAX_MB", 1024.0, reads=CLIENT, parse=_seconds(0.001, "MB"), shown="`1024`",
        doc="Redis memory a fanned-out book's part audio may take while it waits for the stitch (estimated from "
        "the text at submit, 16-bit samples before FLAC): a bigger book fans out only its first parts that fit and "
        "its own job synthesizes the rest (a warning says so). See Many hosts.",
    )  # fmt: skip
    fetch_max_mb: float = setting(
        "NARRATE_FETCH_MAX_MB", 2048.0, reads=WORKER, parse=_seconds(0.001, "MB"), shown="`2048`",
        doc="Largest output `narrate fetch` copies through Redis (streamed in chunks, kept 1 hour).",
    )  # fmt: skip
    engine: str = setting(
        "NARRATE_ENGINE", "mlx", reads=WORKER, parse=_choice(ENGINES),
        doc="`fake` swaps in the deterministic tone generator of narrate.worker.testkit: for fault tests only.",
    )  # fmt: skip
    blas: str = setting(
        "NARRATE_BLAS", "auto", reads=WORKER, parse=_choice(BLAS_CHOICES),
        doc="Linux CPU: `auto` gives MLX's float32 matrix products the system OpenBLAS if installed (Debian/Ubuntu: "
        "`libopenblas0`; 5-6x MLX's bundled reference BLAS), else the codec's go through numpy's OpenBLAS; `numpy` "
        "the latter even where it is installed; `bundled` keeps MLX's own. See docs/models.md.",
    )  # fmt: skip

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings from NARRATE_* environment variables; `overrides` (from flags) win when not None."""
        values: dict[str, object] = {}
        for f in fields(cls):
            value = _from_env(f)
            if value is not MISSING:
                values[f.name] = value
        for k, v in overrides.items():  # flags: checked as the variable would be (whole numbers: bounds)
            if v is None:
                continue
            f = cls.__dataclass_fields__[k]
            if isinstance(v, int) and not isinstance(v, bool) and f.metadata["parse"] is not _str:
                v = f.metadata["parse"]("--" + k.replace("_ms", "").replace("_", "-"), str(v))
            values[k] = v
        check_quant(values.get("quant"))  # type: ignore[arg-type]
        return cls(**values)  # type: ignore[arg-type]


def _from_env(f: Field) -> Any:
    """A field's value from its environment variable, checked; MISSING where it is unset or empty."""
    raw = os.environ.get(f.metadata["env"])
    return MISSING if raw in (None, "") else f.metadata["parse"](f.metadata["env"], raw)


def env_value(name: str) -> Any:
    """One setting from its environment variable, checked as ``from_env`` checks it, else its default:
    for code that must read it before the rest (narrate.worker.blas, before mlx is imported)."""
    value = _from_env(Settings.__dataclass_fields__[name])
    return default(name) if value is MISSING else value


def default(name: str) -> Any:
    """A setting's default (for code that needs it without a Settings, e.g. a job recorded before the
    setting existed, and for help texts): written once, in the field above."""
    f = Settings.__dataclass_fields__[name]
    if f.default is not MISSING:
        return f.default
    assert f.default_factory is not MISSING, f"setting {name} has no default"  # every field has one
    return f.default_factory()
