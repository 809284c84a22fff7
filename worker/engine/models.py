"""Model resolution (Hugging Face ids and local checkpoints), quantization at load, what a
loaded model can speak (its kind: Base clones samples, CustomVoice speaks preset speakers,
VoiceDesign voices from a description), and the warm model cache keyed by (model, quantization).

Id rewriting (``resolve``), where Q is --quant / NARRATE_QUANT or else the device default
(``default_quant``: 6bit with Apple Metal; float32 on a CPU whose float32 products go through the
system OpenBLAS; bf16 on other CPUs and on CUDA, where quantized matmuls are 4-5x slower):

    Qwen/NAME                      -> mlx-community/NAME-Q
    mlx-community/NAME             -> mlx-community/NAME-Q
    mlx-community/NAME-8bit        -> unchanged without --quant; mlx-community/NAME-Q with it
    other-org/NAME                 -> unchanged; quantized at load to Q if Q is 4/6/8bit
    /a/local/checkpoint            -> loaded as is (bf16, or float32 where that is the CPU's default);
                                      quantized at load to Q if Q is 4/6/8bit

Q = float32 loads the bf16 weights (``mlx-community/NAME-bf16`` for the first two rows) and upcasts
the talker and code predictor once at load (``upcast``): they then compute in float32, their KV
caches too (the voice is cast to the talker's dtype). On a Linux CPU with the system OpenBLAS
(narrate.worker.blas) their matrix products go through it instead of MLX's bfloat16 kernels: faster
there, and the reference's own codes (tests/system/test_parity.py), so it is that CPU's default;
docs/models.md has the figures.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from narrate.jobs.api.model_choice import random_weights
from narrate.jobs.errors import BadInput
from narrate.worker.engine.model_key import HashMemo, model_key

log = logging.getLogger("narrate.worker")

QUANT_SUFFIX = re.compile(r"-(bf16|4bit|6bit|8bit)$")
HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
BITS = {"4bit": 4, "6bit": 6, "8bit": 8}
FLOAT32 = "float32"  # the quant that computes the talker and code predictor in float32 (upcast at load)
GROUP_SIZE = 64


def is_metal() -> bool:
    return mx.default_device().type == mx.gpu and mx.metal.is_available()


def cpu_float32() -> bool:
    """Whether float32 is this host's default: a CPU whose float32 products go through the system OpenBLAS
    (narrate.worker.blas). There the talker and code predictor run faster in float32 than in MLX's bfloat16 kernels
    and compute the reference's own codes; without that BLAS float32 is slower, and bf16 stays the default."""
    from narrate.worker import blas

    return mx.default_device().type == mx.cpu and blas.loaded is not None


def default_quant(metal: bool, float32: bool = False) -> str:
    """What a hub model is loaded as without --quant: 6bit with Metal, float32 where ``cpu_float32``, else bf16."""
    return "6bit" if metal else FLOAT32 if float32 else "bf16"


@dataclass(frozen=True)
class Resolved:
    source: str  # a hub id or an absolute local path
    quant: str  # bf16 | 4bit | 6bit | 8bit: what the loaded model will be
    quantize_bits: int | None  # quantize at load with this width (None: load as is)
    local: bool


def resolve(model: str, quant: str | None, metal: bool | None = None, float32: bool | None = None) -> Resolved:
    """Apply the id-rewriting table in this module's docstring (`metal`, `float32`: this host's, unless given)."""
    if metal is None:
        metal = is_metal()
    if float32 is None:
        float32 = not metal and cpu_float32()
    as_is = FLOAT32 if float32 else "bf16"  # a checkpoint loaded as it is (float32: upcast where it is the default)
    path = Path(model).expanduser()
    if path.is_dir():
        q = quant or as_is
        return Resolved(str(path.resolve()), q, BITS.get(q), local=True)
    if model.startswith((".", "/", "~")) or not HUB_ID.match(model):
        raise BadInput(f"model {model!r} is neither a local checkpoint directory nor a Hugging Face id (org/name)")
    org, name = model.split("/", 1)
    if org in ("Qwen", "mlx-community"):
        m = QUANT_SUFFIX.search(name)
        if m and quant is None:
            return Resolved(f"mlx-community/{name}", m.group(1), None, local=False)
        base = QUANT_SUFFIX.sub("", name)
        q = quant or default_quant(metal, float32)
        return Resolved(f"mlx-community/{base}-{'bf16' if q == FLOAT32 else q}", q, None, local=False)
    q = quant or as_is
    return Resolved(model, q, BITS.get(q), local=False)


KINDS = ("base", "custom_voice", "voice_design")  # config.json's tts_model_type
KIND_NAMES = {"base": "Base", "custom_voice": "CustomVoice", "voice_design": "VoiceDesign"}  # the model ids' suffixes
NO_INSTRUCTION_SIZE = "0b6"  # tts_model_size of the 0.6B models: mlx-audio drops a preset's instruction there


@dataclass
class LoadedModel:
    model: nn.Module
    resolved: Resolved
    key: str  # identity of the weights (see model_key.py): keys voice embeddings and checkpoints
    kind: str = "base"  # base | custom_voice | voice_design (config tts_model_type)
    speakers: list[str] = field(default_factory=list)  # preset speakers, sorted, lower case ([] unless custom_voice)
    # Whether a preset's instruction reaches the model: not on a 0.6B model (mlx-audio drops it
    # there) nor on a Base one (it has no instruction path). A VoiceDesign model always reads its
    # description.
    follows_instruct: bool = False
    # mlx_compat.check_internals passed on this model (the engine checks once per loaded model:
    # the installed mlx-audio does not change while the model is loaded).
    internals_checked: bool = field(default=False, compare=False, repr=False)

    @property
    def talker_dtype(self) -> mx.Dtype:
        dtype: mx.Dtype = self.model.talker.get_input_embeddings().weight.dtype
        return dtype


def quantize(model: nn.Module, bits: int) -> int:
    """Quantize talker/code-predictor linears in place with the model's own predicate
    (speaker encoder, embeddings and codec stay floating point). Returns the layer count.

    Only the talker subtree is walked: the codec decoder is an mx.compile'd function that
    nn.quantize cannot traverse, and the predicate excludes it anyway."""
    count = 0

    def predicate(path: str, module: nn.Module) -> bool:
        nonlocal count
        ok = (
            hasattr(module, "to_quantized")
            and getattr(module, "weight", None) is not None
            and module.weight.shape[-1] % GROUP_SIZE == 0
            and model.model_quant_predicate(f"talker.{path}", module)
        )
        count += bool(ok)
        return ok

    nn.quantize(model.talker, group_size=GROUP_SIZE, bits=bits, class_predicate=predicate)
    return count


def upcast(model: nn.Module) -> None:
    """The talker and its code predictor in float32 (their floating-point weights cast once; the
    speaker encoder and the codec are float32 already)."""
    model.talker.set_dtype(mx.float32)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """mlx-audio prints loader chatter (and its models progress) and transformers warns about the config
    class: hide both (the TTS loader here, the recognizer's loader and transcriptions)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        hf_logging.set_verbosity(level)


class ModelUnavailable(BadInput):
    """The hub model cannot be had (no network and not in the hub cache, or no such model):
    retrying the job at once cannot help, so it fails on its first attempt."""


@contextlib.contextmanager
def _hub_errors(resolved: Resolved) -> Iterator[None]:
    """huggingface_hub's errors as one line saying which download failed and what to do."""
    from huggingface_hub import constants
    from huggingface_hub.errors import LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError

    try:
        yield
    except (LocalEntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError) as e:
        if resolved.local:
            raise
        what = f"cannot download {resolved.source} from the Hugging Face hub ({constants.ENDPOINT})"
        if isinstance(e, LocalEntryNotFoundError):
            why = "HF_HUB_OFFLINE is set" if constants.HF_HUB_OFFLINE else str(e).splitlines()[0].removeprefix("Got: ")
            why += f", and it is not in the hub cache ({constants.HF_HUB_CACHE})"
            do = f"use a local checkpoint (--model DIR), {random_weights(resolved.source)}, or run the same command "
            do += "again once the network is back"
        else:
            why = "no such model, or it is private or gated (log in with `hf auth login`)"
            do = f"check the name, use a local checkpoint (--model DIR) or {random_weights(resolved.source)}"
        raise ModelUnavailable(f"{what}: {why}; {do}") from e


def load(resolved: Resolved, hashes: HashMemo | None = None) -> LoadedModel:
    """Load (and quantize) a resolved model; `hashes` remembers a local checkpoint's file hashes."""
    from mlx_audio.tts.utils import load_model

    if resolved.local and not (Path(resolved.source) / "config.json").exists():
        raise BadInput(f"model directory {resolved.source} has no config.json: not a checkpoint")
    log.info("loading %s (%s)", resolved.source, resolved.quant)
    with quiet(), _hub_errors(resolved):
        model = load_model(resolved.source)
    kind = getattr(model.config, "tts_model_type", None)
    if kind not in KINDS or (kind == "base") != (model.speaker_encoder is not None):
        raise BadInput(
            f"{resolved.source} is not a Qwen3-TTS model narrate knows (tts_model_type {kind!r}; "
            f"narrate speaks {', '.join(KIND_NAMES.values())} models)"
        )
    if resolved.quantize_bits:
        if not is_metal():
            log.warning(
                "quantizing to %s on %s: quantized matmuls are 4-5x slower than bf16 here "
                "(they are faster only with Apple Metal); consider --quant bf16",
                resolved.quant,
                mx.default_device(),
            )
        n = quantize(model, resolved.quantize_bits)
        log.info("quantized %d layers to %d bit", n, resolved.quantize_bits)
    if resolved.quant == FLOAT32:
        if mx.default_device().type != mx.cpu:
            log.warning("float32 on %s: twice bf16's memory and reads; it pays off on a CPU only", mx.default_device())
        upcast(model)
        log.info("the talker and code predictor compute in float32 (weights upcast at load)")
    mx.eval(model.parameters())
    speakers = sorted(s.lower() for s in model.get_supported_speakers()) if kind == "custom_voice" else []
    return LoadedModel(
        model=model,
        resolved=resolved,
        key=model_key(resolved, hashes),
        kind=kind,
        speakers=speakers,
        follows_instruct=kind != "base" and getattr(model.config, "tts_model_size", None) != NO_INSTRUCTION_SIZE,
    )


class ModelCache:
    """Loaded models stay warm across jobs, keyed by (source, quant); the oldest is dropped. A
    warm local checkpoint whose files changed on disk since it was loaded is loaded again.
    `hashes`: the JSON file that remembers local checkpoints' file hashes across processes."""

    def __init__(self, capacity: int = 2, hashes: Path | None = None):
        self.capacity = capacity
        self.hashes = HashMemo(hashes)
        self._models: OrderedDict[tuple[str, str], LoadedModel] = OrderedDict()

    def get(self, model: str, quant: str | None) -> LoadedModel:
        resolved = resolve(model, quant)
        key = (resolved.source, resolved.quant)
        warm = self._models.get(key)
        if warm is not None and (not resolved.local or warm.key == model_key(resolved, self.hashes)):
            self._models.move_to_end(key)
            return warm
        self._models.pop(key, None)
        loaded = load(resolved, self.hashes)
        self._models[key] = loaded
        while len(self._models) > self.capacity:
            self._models.popitem(last=False)
            mx.clear_cache()
        return loaded

    def __len__(self) -> int:
        return len(self._models)
