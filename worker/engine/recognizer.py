"""The proof pass's speech recognizer: an mlx-audio STT model (``mlx_audio.stt``: Whisper, Parakeet, Qwen3-ASR,
Moonshine, ...) loaded by mlx-audio's own loader from a hub id or a local directory, transcribing batches of takes.
It implements narrate.jobs.task.model_protocols.Recognizer.

Takes come at 24 kHz and are resampled to the model's rate (16 kHz for every family above) by mlx-audio's own
resampler. A Qwen3-ASR model transcribes a batch of takes in one greedy decode (``decode_qwen3_asr``: the takes of
one language, sorted by length so that little padding is added, padded to the longest), each take stopping at its
own token limit (mlx-audio's ``_generate_chunks_batched`` has one budget for the whole batch, so one take that runs
on could spend every other take's share), and the batch shrinking as its takes end; every other family
transcribes one take at a time through its public ``generate``. A take's limit is counted with the model's own
tokenizer from the text it should say (jobs.proof.recognizer_choice.limit_of).

The model runs on one thread of the process (``RecognizerThread``, with its own MLX stream, so the job's proof
thread and the decode loop never share one), a daemon thread that lives as long as the process: MLX keeps a cache
of compiled functions (mlx.nn's activations are compiled) per thread whose destructor, run as the thread ends,
takes the GIL; a thread that ends while Python is finalizing (a joined pool thread at exit) then aborts the
process ("terminate called without an active exception", exit 134). A parked daemon thread never ends.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import queue
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Self, TypeVar

import mlx.core as mx
import numpy as np
from narrate.jobs.api.offline import random_helper
from narrate.jobs.errors import BadInput
from narrate.jobs.proof.recognizer_choice import limit_of, token_limit
from narrate.jobs.settings import SAMPLE_RATE
from narrate.worker.engine.models import quiet

log = logging.getLogger("narrate.worker")
# The Qwen3-ASR internals the batched decode relies on, with the parameters it passes (checked at load: a release
# that changes them fails there), and the attributes of mlx-audio's KVCache it reads.
QWEN3_ASR_INTERNALS = {
    "_preprocess_audio": {"audio"},
    "get_audio_features": {"input_features", "feature_attention_mask"},
    "_build_prompt": {"num_audio_tokens", "language", "system_prompt"},
    "_build_inputs_embeds": {"input_ids", "audio_features"},
    "_forward_with_embeds": {"inputs_embeds", "cache"},
    "make_cache": set(),
    "_eos_token_ids": set(),
    "extract_language": {"text"},
}
KV_CACHE_FIELDS = ("keys", "values", "offset")
BATCH = 32  # takes decoded together (Qwen3-ASR)
SHRINK = 0.5  # the batch drops its ended takes once no more than this share of its rows is still going
MIN_SECONDS = 0.1  # a shorter take is heard as nothing
HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")


class RecognizerUnavailable(BadInput):
    """The recognizer (or the aligner) cannot be loaded (no network and not in the hub cache, no such model, not an
    STT model)."""


def family(model: Any) -> str:
    """The mlx-audio STT family of a loaded model: its module's package (whisper, parakeet, qwen3_asr, ...)."""
    inner = getattr(model, "_model", model)  # Qwen3-ASR's wrapper
    parts = type(inner).__module__.split(".")
    return parts[parts.index("models") + 1] if "models" in parts else parts[-1]


def check_internals(model: Any) -> None:
    """The Qwen3-ASR internals the batched decode uses are there, with the parameters it passes."""
    for name, wanted in QWEN3_ASR_INTERNALS.items():
        fn = getattr(model, name, None)
        if fn is None:
            raise RuntimeError(f"mlx-audio's Qwen3-ASR has no {name} any more: the proof pass needs it")
        missing = wanted - set(inspect.signature(fn).parameters)
        if missing:
            raise RuntimeError(f"mlx-audio's Qwen3-ASR {name} lacks {sorted(missing)}: the proof pass needs them")
    for name in ("model", "lm_head", "_tokenizer", "config"):
        if not hasattr(model, name):
            raise RuntimeError(f"mlx-audio's Qwen3-ASR has no {name} any more: the proof pass needs it")
    cache = model.make_cache()
    if not cache or not all(hasattr(cache[0], f) for f in KV_CACHE_FIELDS):
        raise RuntimeError(f"mlx-audio's KVCache lacks {', '.join(KV_CACHE_FIELDS)}: the proof pass needs them")


class Role(NamedTuple):
    """What a model loaded by ``load_stt`` is for, as its errors say it."""

    name: str  # "recognizer"
    kind: str  # "a speech recognizer": what mlx-audio must know it as
    whose: str  # "the proof pass's recognizer"
    local: str  # how to name a local one instead: "--proof DIR, or NARRATE_PROOF_MODEL on the worker"
    option: str  # the option that names it: "--proof"


ROLE = Role(
    "recognizer",
    "a speech recognizer",
    "the proof pass's recognizer",
    "--proof DIR, or NARRATE_PROOF_MODEL on the worker",
    "--proof",
)


class SttModel:
    """What the recognizer and the aligner share: a model loaded by mlx-audio's STT loader, from a hub id or a
    local directory, on the recognizer's thread (``RecognizerThread``), its errors worded for its ``ROLE``; what it
    computes runs on that thread too (``on_thread``)."""

    ROLE: ClassVar[Role]

    def __init__(self, source: str, model: Any):
        self.source = source
        self.model = model

    @classmethod
    def load(cls, source: str) -> Self:
        """The model at `source` through mlx-audio's STT loader, on the recognizer's thread."""
        loaded: Self = RecognizerThread.run(cls._load, source)
        return loaded

    @classmethod
    def _load(cls, source: str) -> Self:
        """``load`` on the calling thread (the recognizer's)."""
        resolved, model = load_stt(source, cls.ROLE)
        return cls(resolved, model)

    @staticmethod
    def on_thread(fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on the recognizer's thread and MLX stream."""
        return RecognizerThread.run(fn, *args)


class MlxRecognizer(SttModel):
    """A loaded mlx-audio STT model (``load``), transcribing on its own thread and MLX stream."""

    ROLE = ROLE

    def __init__(self, source: str, model: Any):
        super().__init__(source, model)
        self.family = family(model)
        if self.family == "qwen3_asr":
            check_internals(model)
        # what Parakeet's generate computes in (mlx-audio's default is bf16 whatever the weights)
        self.dtype = (weights_dtype(model) or mx.bfloat16) if self.family == "parakeet" else None

    @property
    def sample_rate(self) -> int:
        pre = getattr(self.model, "preprocessor_config", None)  # Parakeet's
        rate = getattr(pre, "sample_rate", None) or getattr(self.model, "sample_rate", None)
        return int(rate) if rate else 16_000

    def transcribe(self, takes: Sequence[np.ndarray], *, languages: Sequence[str], texts: Sequence[str]) -> list[str]:
        """What is heard in each take (24 kHz floats), on the recognizer's thread."""
        return self.on_thread(self._transcribe, list(takes), list(languages), list(texts))

    def limit(self, text: str, seconds: float) -> int:
        """The tokens a transcript of a take of `text`, `seconds` long, may run to
        (jobs.proof.recognizer_choice.limit_of): the text counted with the model's own tokenizer where it has one
        (Qwen3-ASR's), else from its bytes."""
        tokenizer = getattr(self.model, "_tokenizer", None)
        if tokenizer is None or not hasattr(tokenizer, "encode"):
            return token_limit(text, seconds)
        return limit_of(len(tokenizer.encode(text, add_special_tokens=False)), seconds)

    def _transcribe(self, takes: list[np.ndarray], languages: list[str], texts: list[str]) -> list[str]:
        """``transcribe`` on the calling thread (the recognizer's)."""
        from mlx_audio.utils import resample_audio

        rate = self.sample_rate
        audio = [
            np.asarray(resample_audio(np.asarray(t, np.float32), SAMPLE_RATE, rate, axis=0), np.float32) for t in takes
        ]
        heard = [i for i, a in enumerate(audio) if a.size >= rate * MIN_SECONDS]  # shorter: nothing to hear
        limits = [self.limit(texts[i], audio[i].size / rate) for i in heard]
        out = [""] * len(audio)
        try:
            if self.family == "qwen3_asr":
                got = self._batched([audio[i] for i in heard], [languages[i] for i in heard], limits)
            else:
                got = [self._one(audio[i], languages[i], n) for i, n in zip(heard, limits, strict=True)]
        finally:
            mx.synchronize()  # the decode's last step, evaluated ahead, is done before the thread goes on
        for i, text in zip(heard, got, strict=True):
            out[i] = text
        return out

    def _batched(self, audio: list[np.ndarray], languages: list[str], limits: list[int]) -> list[str]:
        """Qwen3-ASR: the takes of one language in batches of BATCH, sorted by length."""
        out = [""] * len(audio)
        order = sorted(range(len(audio)), key=lambda i: (languages[i], len(audio[i]), limits[i]))
        for start in range(0, len(order), BATCH):
            group = order[start : start + BATCH]
            for lang in dict.fromkeys(languages[i] for i in group):
                rows = [i for i in group if languages[i] == lang]
                name = None if lang in ("", "auto") else lang.capitalize()
                with quiet():
                    texts = decode_qwen3_asr(self.model, [audio[i] for i in rows], [limits[i] for i in rows], name)
                for i, text in zip(rows, texts, strict=True):
                    out[i] = self.model.extract_language(text)[1] if name is None else text
        return [t.strip() for t in out]

    def _one(self, audio: np.ndarray, language: str, limit: int) -> str:
        """Any other family: its public ``generate``, one take."""
        kwargs: dict[str, Any] = {}
        params = inspect.signature(self.model.generate).parameters
        if self.family == "whisper" and language not in ("", "auto"):
            from narrate.jobs.proof.verdict import language_code

            kwargs["language"] = language_code(language)
        if "max_tokens" in params:
            kwargs["max_tokens"] = limit
        if "verbose" in params:
            kwargs["verbose"] = None if self.family == "whisper" else False
        if "dtype" in params and self.dtype is not None:
            kwargs["dtype"] = self.dtype
        with quiet():
            result = self.model.generate(mx.array(audio) if self.family == "parakeet" else audio, **kwargs)
        return str(getattr(result, "text", result) or "").strip()


def decode_qwen3_asr(model: Any, audio: list[np.ndarray], limits: list[int], language: str | None) -> list[str]:
    """A Qwen3-ASR model's greedy transcripts of takes (16 kHz) in one batch, as mlx-audio's
    ``_generate_chunks_batched`` makes them (the takes padded to the longest, so that every row has the same prompt;
    the prompt through the model once, only its last position through the vocabulary head; the next step built and
    started before the tokens of this one are read), except that each take stops at its own limit (or its end of
    text), and that once no more than SHRINK of the rows are still going the batch drops the others: the rows that
    go on are taken out of the next step's tokens and the KV cache, so a long take is no longer decoded in a batch
    of finished ones."""
    if not audio:
        return []
    pad_to = max(len(a) for a in audio)
    embeds = []
    prompt = None
    for a in audio:
        features, mask, tokens = model._preprocess_audio(np.pad(a, (0, pad_to - len(a))))
        if prompt is None:  # the same for every row: the same number of audio tokens, the same language
            prompt = model._build_prompt(tokens, language, None)
        embeds.append(model._build_inputs_embeds(prompt, model.get_audio_features(features, mask))[0])
    cache = model.make_cache()
    hidden = model.model(inputs_embeds=mx.stack(embeds, axis=0), cache=cache)[:, -1:, :]
    head = model.lm_head if model.lm_head is not None else model.model.embed_tokens.as_linear
    y = mx.argmax(head(hidden)[:, -1, :], axis=-1)
    mx.async_eval(y)
    eos = model._eos_token_ids()
    out: list[list[int]] = [[] for _ in audio]
    rows: list[int | None] = list(range(len(audio)))  # the take of each row of the batch; None: ended
    while True:
        step = model._forward_with_embeds(model.model.embed_tokens(y[:, None]), cache)
        following = mx.argmax(step[:, -1, :], axis=-1)
        mx.async_eval(following)
        ids: list[int] = y.tolist()  # type: ignore[assignment]  # a 1-D array of token ids
        for row, token in enumerate(ids):
            take = rows[row]
            if take is None:
                continue
            if token in eos:
                rows[row] = None
                continue
            out[take].append(token)
            if len(out[take]) >= limits[take]:
                rows[row] = None
        going = [row for row, take in enumerate(rows) if take is not None]
        if not going:
            break
        if len(going) <= SHRINK * len(rows):  # the rows that go on, alone
            index = mx.array(going)
            following = following[index]
            for layer in cache:
                layer.keys, layer.values = layer.keys[index], layer.values[index]
            rows = [rows[row] for row in going]
        y = following
    return [model._tokenizer.decode(tokens, skip_special_tokens=True) for tokens in out]


T = TypeVar("T")


class RecognizerThread:
    """The process's one recognizer thread (a daemon with its own MLX stream, started on first use, never
    ended: see the module's docstring); ``run`` calls a function there and waits for its result."""

    _lock = threading.Lock()
    _queue: queue.SimpleQueue | None = None

    @classmethod
    def run(cls, fn: Callable[..., T], *args: Any) -> T:
        with cls._lock:
            if cls._queue is None:
                cls._queue = queue.SimpleQueue()
                threading.Thread(
                    target=cls._serve, args=(cls._queue, mx.default_device()), name="narrate-proof", daemon=True
                ).start()
            work: queue.SimpleQueue = cls._queue
        done: Future[T] = Future()
        work.put((fn, args, done))
        return done.result()

    @staticmethod
    def _serve(work: queue.SimpleQueue, device: Any) -> None:
        mx.set_default_stream(mx.new_stream(device))
        while True:
            fn, args, done = work.get()
            try:
                done.set_result(fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                done.set_exception(e)


def load_stt(source: str, role: Role) -> tuple[str, Any]:
    """(what was loaded: a hub id or an absolute directory, the model) of `source` through mlx-audio's STT loader,
    on the calling thread (the recognizer's: ``RecognizerThread``); RecognizerUnavailable says why it cannot be."""
    from mlx_audio.stt.utils import load

    path = Path(source).expanduser()
    local = path.is_dir()
    if local and not (path / "config.json").exists():
        raise RecognizerUnavailable(f"{role.name} directory {source} has no config.json: not a checkpoint")
    if not local and not HUB_ID.fullmatch(source):
        raise RecognizerUnavailable(f"{role.name} {source!r} is neither a local directory nor a Hugging Face id")
    log.info("loading the %s %s", role.name, source)
    with quiet(), _hub_errors(source, local, role):
        try:
            model = load(str(path.resolve()) if local else source)
        except ValueError as e:  # mlx-audio: a model type it has no STT model for
            raise RecognizerUnavailable(f"{source} is not {role.kind} mlx-audio knows: {e}") from None
    features_in_tower_dtype(model)
    return (str(path.resolve()) if local else source), model


def weights_dtype(module: Any) -> mx.Dtype | None:
    """The dtype of a module's first floating-point weight (its checkpoint's), or None where it has none."""
    from mlx.utils import tree_flatten

    flat: list[tuple[str, Any]] = tree_flatten(module.parameters())  # type: ignore[assignment]
    for _, a in flat:
        if isinstance(a, mx.array) and mx.issubdtype(a.dtype, mx.floating):
            return a.dtype
    return None


def features_in_tower_dtype(model: Any) -> None:
    """An audio-tower model (Qwen3-ASR, Qwen3-ForcedAligner) computes its tower in its weights' dtype.

    mlx-audio computes the mel features in float32 and hands them to the tower uncast, and keeps the tower's
    sinusoidal position table (a private array, which the loader's cast never reaches) in float32, so a bf16
    tower computed in float32 (MLX promotes a float32 and a bf16 operand to float32): the same class of bug as
    the talker's speaker embedding (docs/models.md). PyTorch casts such a table (a buffer) with the weights;
    here the tower's private arrays are cast at load, and an instance-level ``get_audio_features``, which every
    path of the model calls (mlx-audio's ``generate``, narrate's own decode), casts the features. mlx-audio's
    Qwen3-ASR ``Model`` passes attributes to the module it holds (``_model``): that module gets both."""
    model = getattr(model, "_model", model)
    tower = getattr(model, "audio_tower", None)
    own = getattr(type(model), "get_audio_features", None)
    dtype = weights_dtype(tower) if tower is not None else None
    if tower is None or own is None or dtype is None:
        return
    for _, module in tower.named_modules():
        for name, value in list(module.items()):
            if name.startswith("_") and isinstance(value, mx.array) and mx.issubdtype(value.dtype, mx.floating):
                module[name] = value.astype(dtype)

    def get_audio_features(input_features: mx.array, feature_attention_mask: mx.array | None = None) -> mx.array:
        out: mx.array = own(model, input_features.astype(dtype), feature_attention_mask)
        return out

    model.get_audio_features = get_audio_features


@contextlib.contextmanager
def _hub_errors(source: str, local: bool, role: Role) -> Iterator[None]:
    """huggingface_hub's errors as one line naming the model and what to do."""
    from huggingface_hub import constants
    from huggingface_hub.errors import LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError

    try:
        yield
    except (LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError) as e:
        if local:
            raise
        what = f"cannot download {role.whose} {source} from the Hugging Face hub ({constants.ENDPOINT})"
        if isinstance(e, LocalEntryNotFoundError):
            cache = f"it is not in the hub cache ({constants.HF_HUB_CACHE})"
            why = (
                f"HF_HUB_OFFLINE is set and {cache}"
                if constants.HF_HUB_OFFLINE
                else f"{cache}; the hub cannot be reached"
            )
            do = (
                f"name a local {role.name} ({role.local}; to try it offline, a random-weight one: "
                f"{random_helper(source, role.name)}, then {role.option} DIR), or run it again once the network is "
                "back"
            )
        else:
            why, do = "no such model, or it is private or gated", f"check the name given to {role.option}"
        raise RecognizerUnavailable(f"{what}: {why}; {do}") from e
