"""Every setting narrate has, in one place, each default written once: ``Settings`` is a pydantic-settings model
whose fields are read from NARRATE_* environment variables (the field's name in capitals after the prefix). Each
field says who reads it (``client``: the host that submits; ``worker``: the host that synthesizes; ``both``) and what
it does; docs/settings.md's table is made from them (``python -m narrate.jobs.settings``). Flags override the
environment, which overrides the defaults. Fixed facts of the audio format and input limits are constants below."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any

from narrate.jobs.errors import BadInput
from narrate.jobs.setting_values import QUANTS as QUANTS  # re-exported: the quantizations, checked by check_quant
from narrate.jobs.setting_values import Names, Pairs, Quant, Refused, Url, UserPath, choice, number, whole
from narrate.jobs.setting_values import check_quant as check_quant
from pydantic import Field, TypeAdapter, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "NARRATE_"

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


def setting(default: Any = None, *, reads: str, doc: str, factory: Any = None, shown: str | None = None) -> Any:
    """A Settings field: its default (or default factory), who reads it, what it does, and its default as the table
    shows it (where that is not the default's own text)."""
    extra: dict[str, Any] = {"reads": reads, "shown": shown}
    if factory is not None:
        return Field(default_factory=factory, description=doc, json_schema_extra=extra)
    return Field(default=default, description=doc, json_schema_extra=extra)


class Settings(BaseSettings):
    """Resolved settings of one narrate process."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_ignore_empty=True, frozen=True, extra="forbid")

    redis_url: str | None = setting(
        None,
        reads=BOTH,
        shown="unset",
        doc="Redis/Valkey to use. Unset: the embedded Valkey server. Passwords are never printed.",
    )
    home: UserPath = setting(
        factory=lambda: Path.home() / ".narrate",
        reads=BOTH,
        shown="`~/.narrate`",
        doc="Data dir (mode 0700, yours only): the embedded server's socket, AOF and log, sentence checkpoints, "
        "and the scratch space where a book is stitched and encoded while it is synthesized (m4a/m4b: its encoded "
        "segments, about 45 MB an hour of audio; other formats: its uncompressed WAV, about 170 MB an hour; plus the "
        "output file while it is written).",
    )
    output_dir: UserPath = setting(
        factory=Path.home,
        reads=BOTH,
        shown="`~`",
        doc="Output root: outputs must lie under it, a relative `-o` and the default output name are taken from it; "
        "jobs store paths relative to it. `run` uses its output file's directory instead.",
    )
    model: str = setting(
        DEFAULT_MODEL,
        reads=BOTH,
        doc="Hugging Face id or local checkpoint dir for jobs submitted without `--model`.",
    )
    quant: Quant = setting(
        None,
        reads=WORKER,
        shown="by device",
        doc="`bf16`, `4bit`, `6bit`, `8bit` or `float32` for jobs submitted without `--quant` (default: 6bit with "
        "Metal, float32 on a CPU with the system OpenBLAS, else bf16); see Models.",
    )
    max_frames: Annotated[int, whole(1, MAX_FRAMES_CAP)] = setting(
        2048,
        reads=CLIENT,
        doc="Cap on codec frames per sentence (12.5 frames = 1 s); part of the job (`--max-frames`). Each "
        "sentence's budget is 2 s + 2.5x its estimated speaking time (by script: ~4.5 CJK characters, ~7 kana, "
        "~6.5 Hangul syllables or ~15 Latin letters a second; digits and symbols read as words; pauses at "
        "punctuation; see `jobs/documents/budgets.py`), capped by this.",
    )
    seed: Annotated[int, whole(0)] = setting(
        0,
        reads=CLIENT,
        doc="Sampling seed of the job (`--seed`); each sentence's seed derives from it and the text.",
    )
    sentence_pause_ms: Annotated[int, whole(0, MAX_PAUSE_MS)] = setting(
        250,
        reads=CLIENT,
        doc="Silence between sentences; part of the job.",
    )
    paragraph_pause_ms: Annotated[int, whole(0, MAX_PAUSE_MS)] = setting(
        750,
        reads=CLIENT,
        doc="Silence between paragraphs; part of the job.",
    )
    chapter_pause_ms: Annotated[int, whole(0, MAX_PAUSE_MS)] = setting(
        2000,
        reads=CLIENT,
        doc="Silence before a chapter; part of the job.",
    )
    speaker_pause_ms: Annotated[int, whole(0, MAX_PAUSE_MS)] = setting(
        500,
        reads=CLIENT,
        doc="Silence where a cast's voice changes within a paragraph (at least; a paragraph's or chapter's "
        "own pause if longer); part of the job.",
    )
    batch_size: Annotated[int | None, whole(1)] = setting(
        None,
        reads=WORKER,
        shown="by device",
        doc="Sentences synthesized together: 16 on a GPU, 8 on a CPU, fewer if their worst-case KV caches "
        "would not fit in a quarter of the device memory.",
    )
    runaway_retries: Annotated[int, whole(0)] = setting(
        1,
        reads=BOTH,
        doc="Times a sentence that used its whole frame budget without ending is synthesized again with a "
        "new seed (the client sizes the job timeout for it).",
    )
    proof_model: str | None = setting(
        None,
        reads=WORKER,
        shown="by language",
        doc="Recognizer for `--proof` with no model: an mlx-audio STT model, hub id or local dir (see docs/proof.md).",
    )
    align_model: str = setting(
        "mlx-community/Qwen3-ForcedAligner-0.6B-8bit",
        reads=WORKER,
        doc="Forced aligner for `--word-timings` with no model: hub id or local dir (see docs/readalong.md).",
    )
    proof_max_wer: Annotated[float, number(0.0, "word error rate")] = setting(
        0.25,
        reads=WORKER,
        shown="`0.25`",
        doc="Proof: a take whose word error rate (against the sentence as spoken) is above this is flagged.",
    )
    proof_ending_words: Annotated[int, whole(1)] = setting(
        2,
        reads=WORKER,
        doc="Proof: a take missing all of the sentence's last this many words has lost its ending (flagged).",
    )
    proof_tail_words: Annotated[int, whole(1)] = setting(
        3,
        reads=WORKER,
        doc="Proof: this many words or more heard after the sentence's last word are a made-up tail (flagged).",
    )
    proof_rate_factor: Annotated[float, number(1.0, "times")] = setting(
        1.8,
        reads=WORKER,
        shown="`1.8`",
        doc="Proof: a take spoken this many times slower or faster than its voice's norm (words a second) is flagged.",
    )
    proof_max_silence_s: Annotated[float, number(0.1)] = setting(
        1.5,
        reads=WORKER,
        shown="`1.5`",
        doc="Proof: a take with a silence longer than this between its first and last sound is flagged.",
    )
    queue: str = setting(
        "narrate",
        reads=BOTH,
        doc="Queue that `submit` uses and `worker` takes from (`--queue`), with `NAME-high` and `NAME-low` for "
        "`--priority`.",
    )
    lock_path: UserPath = setting(
        factory=lambda: Path(tempfile.gettempdir()) / "narrate-host.lock",
        reads=WORKER,
        shown="by accelerator",
        doc="The host lock file, held by the worker (or `narrate run`) that synthesizes. Unset: on Metal or an "
        "NVIDIA GPU `$TMPDIR/narrate-host.lock`, shared by every home of the machine (two workers never share "
        "the GPU); on a machine with only CPUs `$NARRATE_HOME/host.lock`, one per home. Set it to share one "
        "lock otherwise.",
    )
    ffmpeg: str | None = setting(
        None,
        reads=BOTH,
        shown="imageio-ffmpeg's",
        doc="The ffmpeg binary for reading voices and encoding outputs (no system ffmpeg is needed).",
    )
    hang_timeout: Annotated[int, whole(1)] = setting(
        600,
        reads=WORKER,
        doc="Seconds a busy worker may go without progress before its supervisor kills it.",
    )
    max_attempts: Annotated[int, whole(1)] = setting(
        3,
        reads=BOTH,
        doc="Crashes in a row on the same batch (worker), and attempts after exceptions (set at submit), "
        "before a job fails for good.",
    )
    heartbeat_s: Annotated[int, whole(1)] = setting(
        10,
        reads=WORKER,
        doc="How often a busy worker refreshes its liveness in Redis; `resume` treats a started job as "
        "abandoned after 3 missed beats of its worker (the interval is recorded in the job).",
    )
    abandoned_grace_s: Annotated[int, whole(0)] = setting(
        30,
        reads=WORKER,
        doc="Added to 3 missed heartbeats before a started job counts as abandoned (`resume`; a part of a fanned-out "
        "book is then taken over by another host's scheduler); recorded in the job by the worker running it.",
    )
    keep_days: Annotated[int, whole(1)] = setting(
        30,
        reads=CLIENT,
        doc="Days a finished or failed job (its status, result and stored document and voice) is kept.",
    )
    redis_patience_s: Annotated[int, whole(0)] = setting(
        120,
        reads=WORKER,
        doc="How long a worker retries Redis commands through an outage (the CLI gives up within seconds).",
    )
    model_cache: Annotated[int, whole(1)] = setting(
        2,
        reads=WORKER,
        doc="Loaded models a worker keeps warm, keyed by (model, quantization); the oldest is dropped.",
    )
    dashboard_username: str | None = setting(
        None,
        reads=CLIENT,
        shown="unset",
        doc="Basic-auth user for `narrate dashboard` (required off loopback, with the password).",
    )
    dashboard_password: str | None = setting(
        None,
        reads=CLIENT,
        shown="unset",
        doc="Basic-auth password for `narrate dashboard`.",
    )
    dashboard_hosts: Names = setting(
        (),
        reads=CLIENT,
        shown="unset",
        doc="Comma-separated extra host names `narrate dashboard` answers (besides loopback and `--bind`): "
        "`name:port` exactly, or a bare `name` on the dashboard's port and bare (behind a proxy). Pages on "
        "these names may also post to it.",
    )
    clip_yield_s: Annotated[float, number(0.0)] = setting(
        10.0,
        reads=WORKER,
        shown="`10`",
        doc="A book (or part) that has run this many seconds on a worker yields it to clip jobs waiting on the "
        "high-priority queue (`POST /v1/audio/speech`, voice previews) that no idle worker took: it ends after its "
        "batch in flight, goes back to the front of its queue and continues from its checkpoints once they are "
        "spoken. `0`: never. A clip for the model the book has loaded does not wait for this: it joins the "
        "book's batches (see `NARRATE_CLIP_RIDE`).",
    )
    clip_ride: Annotated[int, whole(0, 1)] = setting(
        1,
        reads=WORKER,
        doc="`1`: a clip job (`POST /v1/audio/speech`, a voice preview) for the model a running book has loaded joins "
        "the book's batches at the next free slot, ahead of the book's next sentences, and the book goes on. `0`: it "
        "never does (the book yields instead, after `NARRATE_CLIP_YIELD_S`).",
    )
    api_key: str | None = setting(
        None,
        reads=CLIENT,
        shown="unset",
        doc="The key of `narrate serve`'s HTTP API: once set, every request needs `Authorization: Bearer KEY`, on "
        "loopback too; required to serve on any address but loopback. Never printed.",
    )
    serve_hosts: Names = setting(
        (),
        reads=CLIENT,
        shown="unset",
        doc="Comma-separated extra host names `narrate serve` answers (besides loopback and `--bind`), as "
        "`NARRATE_DASHBOARD_HOSTS` for the dashboard; pages on these names may also post to it.",
    )
    callback_hosts: Names = setting(
        (),
        reads=CLIENT,
        shown="unset",
        doc="Comma-separated hosts (`name` or `name:port`) a narration's `callback_url` may name; unset: no "
        "callbacks (the API posts to no host nobody listed).",
    )
    callback_host_concurrency: Annotated[int, whole(1, 64)] = setting(
        2,
        reads=CLIENT,
        doc="Callbacks `narrate serve` sends to one host at once (each server; 16 to all hosts together): a slow "
        "host delays only its own.",
    )
    openai_voices: Pairs = setting(
        (),
        reads=CLIENT,
        shown="unset",
        doc="OpenAI voice names for `POST /v1/audio/speech`, each mapped to a saved voice or preset speaker: "
        "`alloy=alice,onyx=ryan`. Unmapped OpenAI names are refused, saying so.",
    )
    library: str | None = setting(
        None,
        reads=CLIENT,
        shown="unset",
        doc="The audiobook library `narrate export` writes into when no `--library` is given (a folder "
        "Audiobookshelf or Plex watches).",
    )
    abs_url: str | None = setting(
        None,
        reads=BOTH,
        shown="unset",
        doc="An Audiobookshelf server to tell about exported books (the default of `--abs-url`): a scan of its "
        "library after an export into a folder it watches, else an upload of the book.",
    )
    abs_token: str | None = setting(
        None,
        reads=BOTH,
        shown="unset",
        doc="The Audiobookshelf API token (of a user who may upload) used with `--abs-url`, on the host that "
        "exports (the worker's, for `submit --abs-url`). Never stored in Redis or printed.",
    )
    abs_library: str | None = setting(
        None,
        reads=BOTH,
        shown="unset",
        doc="The id of the Audiobookshelf library to scan or upload into; unset: its first book library.",
    )
    public_url: Url = setting(
        "http://127.0.0.1:8000",
        reads=CLIENT,
        doc="Where people and podcast apps reach `narrate serve` (scheme, host and port, as they type it): the "
        "feed URLs `narrate feed` prints begin with it. The server itself builds its feeds' links from the "
        "address each request came to.",
    )
    serve_stall_s: Annotated[float, number(0.1)] = setting(
        30.0,
        reads=CLIENT,
        shown="`30`",
        doc="Seconds `narrate serve` waits for the next piece of a request's body before it answers 408 and "
        "drops the request (a slow or stalled upload holds nothing longer).",
    )
    serve_min_rate_kib: Annotated[int, whole(1)] = setting(
        32,
        reads=CLIENT,
        doc="The slowest average rate, in KiB/s, at which `narrate serve` takes a request's body once its first "
        "`NARRATE_SERVE_STALL_S` are past: a slower body is answered 408 and what it uploaded is removed (a byte "
        "now and then keeps nothing open).",
    )
    serve_body_s: Annotated[float, number(1.0)] = setting(
        3600.0,
        reads=CLIENT,
        shown="`3600`",
        doc="The longest a request's body may take to arrive in whole, however fast it comes (408 after).",
    )
    serve_header_s: Annotated[float, number(0.5)] = setting(
        10.0,
        reads=CLIENT,
        shown="`10`",
        doc="Seconds a connection to `narrate serve` may wait to send a request's headers (a new connection, or "
        "one kept alive after a response) before it is closed.",
    )
    serve_connections: Annotated[int, whole(8)] = setting(
        512,
        reads=CLIENT,
        doc="Open connections `narrate serve` keeps; past it (or `NARRATE_SERVE_CLIENT_CONNECTIONS` of one address) a "
        "new one closes the longest idle, else the slowest body under `NARRATE_SERVE_MIN_RATE_KIB` of an address "
        "holding more than the new one's (else itself): idle sockets and trickling bodies never lock people out.",
    )
    serve_client_connections: Annotated[int, whole(2)] = setting(
        64,
        reads=CLIENT,
        doc="Open connections `narrate serve` keeps from one address (see `NARRATE_SERVE_CONNECTIONS`).",
    )
    serve_stream_s: Annotated[float, number(1.0)] = setting(
        600.0,
        reads=CLIENT,
        shown="`600`",
        doc="The longest one event stream (`/v1/narrations/ID/events`) stays open; it then ends with a `retry` "
        "hint and the client reconnects (EventSource does by itself) for the next stretch.",
    )
    serve_client_streams: Annotated[int, whole(1)] = setting(
        16,
        reads=CLIENT,
        doc="Event streams one address may hold open at once (429 past it).",
    )
    serve_submits_per_min: Annotated[int, whole(1)] = setting(
        60,
        reads=CLIENT,
        doc="Requests that submit work (narrations, speech, voice uploads and designs, the New page) one address "
        "may make a minute; past it, 429 with `Retry-After`.",
    )
    serve_trusted_proxies: Names = setting(
        (),
        reads=CLIENT,
        shown="unset",
        doc="Comma-separated addresses of reverse proxies in front of `narrate serve` whose `X-Forwarded-For` and "
        "`X-Forwarded-Proto` it believes: the client's address (for the limits) and https (the session cookie is "
        "then `Secure`). Unset: those headers are ignored.",
    )
    scheduler_interval_s: Annotated[float, number(0.05)] = setting(
        5.0,
        reads=BOTH,
        shown="`5`",
        doc="How often the scheduler (in `narrate worker`'s supervisor, or `narrate scheduler`) moves due "
        "`--at`/`--in` jobs into their queue and runs due schedule ticks. A tick holds a lease of 5 times this "
        "in Redis, renewed while it runs: a scheduler killed mid-tick is replaced that much later.",
    )
    schedule_settle_s: Annotated[float, number(0.0)] = setting(
        5.0,
        reads=BOTH,
        shown="`5`",
        doc="A watched document modified less than this many seconds ago is still being written: it waits for the "
        "next tick (one dated in the future, by another host's clock, waits until ticks have seen it unchanged "
        "this long).",
    )
    cache_max_gb: Annotated[float, number(0, "gigabytes")] = setting(
        5.0,
        reads=WORKER,
        shown="`5`",
        doc="Size cap of the sentence cache (finished sentences kept in `NARRATE_HOME/checkpoints` after their "
        "job, so a resubmitted or edited book synthesizes only what changed), in GB (10^9 bytes, fractions "
        "allowed). When a job ends the least recently used are evicted until the cache fits, never that job's "
        "own; `0`: each job deletes its checkpoints once its output is written. See `narrate cache`.",
    )
    fanout_max_mb: Annotated[float, number(0.001, "MB")] = setting(
        1024.0,
        reads=CLIENT,
        shown="`1024`",
        doc="Redis memory a fanned-out book's part audio may take while it waits for the stitch (estimated from "
        "the text at submit, 16-bit samples before FLAC): a bigger book fans out only its first parts that fit and "
        "its own job synthesizes the rest (a warning says so). See Many hosts.",
    )
    fetch_max_mb: Annotated[float, number(0.001, "MB")] = setting(
        2048.0,
        reads=WORKER,
        shown="`2048`",
        doc="Largest output `narrate fetch` copies through Redis (streamed in chunks, kept 1 hour).",
    )
    engine: Annotated[str, choice(*ENGINES)] = setting(
        "mlx",
        reads=WORKER,
        doc="`fake` swaps in the deterministic tone generator of narrate.worker.testkit: for fault tests only.",
    )
    blas: Annotated[str, choice(*BLAS_CHOICES)] = setting(
        "auto",
        reads=WORKER,
        doc="Linux CPU: `auto` gives MLX's float32 matrix products the system OpenBLAS if installed (Debian/Ubuntu: "
        "`libopenblas0`; 5-6x MLX's bundled reference BLAS), else the codec's go through numpy's OpenBLAS; `numpy` "
        "the latter even where it is installed; `bundled` keeps MLX's own. See docs/models.md.",
    )

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """Settings from NARRATE_* environment variables; `overrides` (from flags) win when not None. A value that
        cannot be used is a BadInput naming its variable (or flag) and what it takes."""
        given = {k: v for k, v in overrides.items() if v is not None}
        try:
            return cls(**given)  # type: ignore[arg-type]
        except ValidationError as e:
            raise BadInput(_worded(e, given)) from None


def env_name(field: str) -> str:
    return ENV_PREFIX + field.upper()


def _worded(error: ValidationError, given: dict[str, object], field: str = "") -> str:
    """The first refusal of a ValidationError, after the name of the variable or flag that gave the value."""
    first = error.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else field
    who = "--" + field.replace("_", "-") if field in given else env_name(field)
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, Refused):
        return f"{who}{cause}"
    return f"{who}: {first['msg']}"


def env_value(name: str) -> Any:
    """One setting from its environment variable, checked as ``from_env`` checks it, else its default:
    for code that must read it before the rest (narrate.worker.blas, before mlx is imported)."""
    raw = os.environ.get(env_name(name))
    if raw in (None, ""):
        return default(name)
    try:
        return _adapter(name).validate_python(raw)
    except ValidationError as e:
        raise BadInput(_worded(e, {}, name)) from None


@functools.cache
def _adapter(name: str) -> TypeAdapter[Any]:
    """A validator of one setting's type (built once per setting)."""
    return TypeAdapter(Settings.model_fields[name].rebuild_annotation())


def default(name: str) -> Any:
    """A setting's default (for code that needs it without a Settings, e.g. a job recorded before the
    setting existed, and for help texts): written once, in the field above."""
    return Settings.model_fields[name].get_default(call_default_factory=True)


def settings_table() -> list[dict[str, str]]:
    """One row per setting (variable, default as shown, who reads it, what it does)."""
    rows = []
    for name, f in Settings.model_fields.items():
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        shown = extra.get("shown") or f"`{default(name)}`"
        rows.append(
            {"env": env_name(name), "default": str(shown), "reads": str(extra["reads"]), "doc": f.description or ""}
        )
    return rows


def settings_markdown() -> str:
    """The settings table of docs/settings.md."""
    lines = ["| variable | default | read by | what it does |", "|---|---|---|---|"]
    lines += [f"| `{r['env']}` | {r['default']} | {r['reads']} | {r['doc']} |" for r in settings_table()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(settings_markdown())
