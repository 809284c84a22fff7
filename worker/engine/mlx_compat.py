"""Everything narrate needs from mlx-audio's Qwen3-TTS beyond its public API, in one place.

mlx-audio 0.6.2 batches cloned voices only in ICL mode (reference audio *and* transcript); its
x-vector path refuses to batch, and it recomputes the speaker embedding on every call. Its batch
builder (``_prepare_batch_inputs``) does take a speaker and an instruction per row, which it hands
to ``_prepare_generation_inputs`` with each row's text: a CustomVoice preset (the speaker's codec
embedding where Base puts the x-vector, plus the instruction) or a VoiceDesign description. So
every row of a batch can have a voice of its own; ``VoiceRows`` adds the one thing missing, a
cloned row's own cached x-vector, with two narrow instance-level patches while a prefill is built:

- a cloned row's speaker is a tag no checkpoint has (``CLONE_SPEAKER``); the shadowed
  ``_prepare_generation_inputs`` turns it into that row's placeholder reference audio (one per
  distinct embedding: ``PLACEHOLDER_REFERENCE_SAMPLES``), so the row takes mlx-audio's x-vector path;
- the shadowed ``extract_speaker_embedding`` returns the cached embedding (already cast to the
  talker's dtype) that belongs to the placeholder it is given: the speaker encoder never runs.

narrate's decode loop (decode_loop.py) then drives the talker, code predictor and codec itself.
Every mlx-audio internal that worker/ touches is listed in ``REQUIRED_INTERNALS``;
``check_internals`` (run before a loaded model's first synthesis and by the tests) fails loudly when
an mlx-audio release changes one. The test kit's checkpoint writer (testkit/random_checkpoint) also
uses mlx-audio's config classes and ``sanitize`` functions; it checks its own round trip.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mlx.core as mx
from narrate.worker.engine.codec_fast import structure_problems
from narrate.worker.engine.codec_window import window_problems

# The reference "audio" handed to mlx-audio so it takes its x-vector path: 0.1 s of silence at
# 24 kHz, one array per distinct embedding. Its content is never read (``extract_speaker_embedding``
# is shadowed); it only has to be an mx.array, which mlx-audio passes through untouched (its
# identity names the embedding).
PLACEHOLDER_REFERENCE_SAMPLES = 2400
# A cloned row's speaker while its prefill is built: the index of its embedding after the prefix.
# Qwen3's speaker names are lower-case words ([a-z0-9_-]): none starts with a NUL.
CLONE_SPEAKER = "\x00narrate-clone:"

# Where the names below live, under mlx_audio.
MODULES = {
    "qwen3_tts": "mlx_audio.tts.models.qwen3_tts.qwen3_tts",
    "talker": "mlx_audio.tts.models.qwen3_tts.talker",
    "speech_tokenizer": "mlx_audio.tts.models.qwen3_tts.speech_tokenizer",
    "speaker_encoder": "mlx_audio.tts.models.qwen3_tts.speaker_encoder",
    "config": "mlx_audio.tts.models.qwen3_tts.config",
    "base": "mlx_audio.tts.models.base",
    "utils": "mlx_audio.tts.utils",
}

REQUIRED_INTERNALS: dict[str, dict[str, tuple[str, ...]]] = {
    # Callables, with the parameters narrate passes by name (empty: it must only exist).
    "signatures": {
        "utils.load_model": ("model_path",),
        "qwen3_tts.Model._prepare_batch_inputs": ("texts", "language", "speakers", "instructs", "return_metadata"),
        "qwen3_tts.Model._prepare_generation_inputs": (
            "text",
            "language",
            "speaker",
            "ref_audio",
            "ref_text",
            "instruct",
        ),
        "qwen3_tts.Model._next_batch_input_embeds": (
            "trailing_text_hidden",
            "tts_pad_embed",
            "trailing_indices",
            "code_tokens",
            "pad_when_index_clamped",
        ),
        "qwen3_tts.Model.extract_speaker_embedding": ("audio", "sr"),
        "qwen3_tts.Model.get_supported_speakers": (),
        # The benchmark's plain and mlx-batch variants (worker/bench/runner.py).
        "qwen3_tts.Model.generate": ("text", "ref_audio", "max_tokens", "stream", "streaming_interval", "verbose"),
        "qwen3_tts.Model.batch_generate": (
            "texts",
            "ref_audio",
            "ref_text",
            "max_tokens",
            "stream",
            "streaming_interval",
            "verbose",
        ),
        "qwen3_tts.Model.model_quant_predicate": ("path", "module"),
        "talker.Qwen3TTSTalkerForConditionalGeneration.__call__": ("inputs_embeds", "cache", "attention_mask"),
        "talker.Qwen3TTSTalkerForConditionalGeneration.make_cache": (),
        "talker.Qwen3TTSTalkerModel.__call__": ("inputs_embeds", "cache", "attention_mask"),
        "talker.Qwen3TTSTalkerForConditionalGeneration.get_input_embeddings": (),
        "talker.Qwen3TTSTalkerCodePredictor.__call__": ("inputs_embeds", "cache", "generation_step"),
        "talker.Qwen3TTSTalkerCodePredictor.make_cache": (),
        "talker.Qwen3TTSTalkerCodePredictor.codec_embedding": (),
        "speech_tokenizer.Qwen3TTSSpeechTokenizerDecoder.streaming_step": ("codes",),
        "speech_tokenizer.Qwen3TTSSpeechTokenizerDecoder.reset_streaming_state": (),
        "speaker_encoder.Qwen3TTSSpeakerEncoder.__call__": (),
        # The decoder stages codec_fast.py computes one at a time (its ``Settled`` calls their step).
        "speech_tokenizer.ConvNeXtBlock.step": (),
        "speech_tokenizer.DecoderBlock.step": (),
    },
    # Dataclasses, with the fields narrate reads.
    "fields": {
        "qwen3_tts.Qwen3BatchInputs": (
            "input_embeds",
            "trailing_text_hidden",
            "tts_pad_embed",
            "attention_mask",
            "prefill_lens",
        ),
        "config.ModelConfig": ("tts_model_type", "tts_model_size", "talker_config"),
        "config.Qwen3TTSTalkerConfig": (
            "spk_id",  # the preset speakers (get_supported_speakers; the prefill builder's lookup)
            "vocab_size",
            "codec_eos_token_id",
            "num_code_groups",
            "hidden_size",
            "num_hidden_layers",
            "num_key_value_heads",
            "head_dim",
        ),
        "base.GenerationResult": ("audio", "token_count"),
        "base.BatchGenerationResult": ("sequence_idx", "token_count"),
    },
    # The codec decoder's streaming state, which narrate keeps per row and swaps in for each of a
    # row's pieces (codec_stream.py: STATE_ATTRS): instance attributes set in ``__init__``, with the
    # ``reset_state`` that marks a module holding them. A renamed one would not be swapped, and
    # every row would silently continue another row's audio: each class is checked on a tiny
    # instance of its own (``CODEC_PROBES``; microseconds, no weights), and with a loaded
    # model every decoder module with ``reset_state`` must hold one of them.
    "codec_state": {
        "speech_tokenizer.CausalConv1d": ("_buffer",),
        "speech_tokenizer.DecoderInitialConv": ("_buffer",),
        "speech_tokenizer.DecoderOutputConv": ("_buffer",),
        "speech_tokenizer.DecoderBlockUpsample": ("_overflow",),
    },
    # The codec decoder's layers that codec_fast.py replaces by faster equivalents on a CPU while
    # narrate decodes: the convolution each of these modules calls through its ``conv`` attribute
    # (set in ``__init__``: checked on a tiny instance, ``CODEC_PROBES``). Renamed, the decode would
    # quietly keep mlx-audio's slower layers; with a loaded model the decoder's stage lists and a
    # layer of every kind codec_fast replaces are checked too (``codec_fast.structure_problems``).
    "codec_layers": {
        "speech_tokenizer.CausalConv1d": ("conv",),
        "speech_tokenizer.CausalTransposeConv1d": ("conv",),
        "speech_tokenizer.DecoderInitialConv": ("conv",),
        "speech_tokenizer.DecoderOutputConv": ("conv",),
    },
    # Attributes of a loaded model that narrate reads, or resets (the KV cache fields), checked
    # when ``check_internals`` is given the model.
    "attributes": {
        "Model": ("config", "talker", "speech_tokenizer", "speaker_encoder", "generate_config"),
        "Model.speech_tokenizer": ("decoder", "decode_upsample_rate"),
        # streaming state (codec_stream.py); the stage lists streaming_step runs (codec_fast.py); the window's
        # transformer and config (codec_window.py)
        "Model.speech_tokenizer.decoder": ("_transformer_cache", "upsample", "decoder", "pre_transformer", "config"),
        # The code predictor step (code_predictor_step.py) makes one cache per layer and embeds
        # each codebook's token itself.
        "Model.talker.code_predictor": ("model", "codec_embedding"),
        # A prefill runs the talker's layers, then its codec head on the last position only.
        "Model.talker": ("model", "codec_head"),
        "Model.talker.code_predictor.model": ("layers",),
        # The code predictor calls these on the caches it is given (narrate gives it its own:
        # code_predictor_step._GrowingCache, the same interface).
        "Model.talker.code_predictor.make_cache()[i]": ("update_and_fetch", "offset"),
        "Model.talker.make_cache()[i]": ("keys", "values", "offset"),
    },
}


# Constructor arguments of the smallest instance of each "codec_state" and "codec_layers" class.
CODEC_PROBES: dict[str, tuple[int, ...]] = {
    "speech_tokenizer.CausalConv1d": (1, 1, 2),  # in_channels, out_channels, kernel_size
    "speech_tokenizer.CausalTransposeConv1d": (1, 1, 1),  # in_channels, out_channels, kernel_size
    "speech_tokenizer.DecoderInitialConv": (1, 1, 2),  # latent_dim, decoder_dim, kernel_size
    "speech_tokenizer.DecoderOutputConv": (1, 2),  # channels, kernel_size
    "speech_tokenizer.DecoderBlockUpsample": (1, 1, 1),  # in_dim, out_dim, upsample_rate
}
TESTED_VERSION = "0.6.2"  # the mlx-audio release these internals are written against (pyproject pins it)


class InternalsChanged(RuntimeError):
    """The installed mlx-audio no longer has what narrate's batching relies on."""


def _lookup(name: str) -> Any:
    module, _, path = name.partition(".")
    obj: Any = importlib.import_module(MODULES[module])
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _signature_problems() -> list[str]:
    problems = []
    for name, params in REQUIRED_INTERNALS["signatures"].items():
        obj = _lookup(name)
        if obj is None:
            problems.append(f"{name} is missing")
            continue
        if params:
            missing = [p for p in params if p not in inspect.signature(obj).parameters]
            if missing:
                problems.append(f"{name} lacks {missing}")
    return problems


def _field_problems() -> list[str]:
    problems = []
    for name, fields in REQUIRED_INTERNALS["fields"].items():
        obj = _lookup(name)
        if obj is None:
            problems.append(f"{name} is missing")
            continue
        missing = [f for f in fields if f not in getattr(obj, "__dataclass_fields__", {})]
        if missing:
            problems.append(f"{name} lacks {missing}")
    return problems


def _probe_problems(group: str, what: str, marker: tuple[str, ...] = ()) -> list[str]:
    """The instance attributes of a REQUIRED_INTERNALS `group` (and `marker`) that a tiny instance
    of each class lacks."""
    problems = []
    for name, attrs in REQUIRED_INTERNALS[group].items():
        cls = _lookup(name)
        if cls is None:
            problems.append(f"{name} is missing")
            continue
        try:
            probe = cls(*CODEC_PROBES[name])
        except Exception as e:  # noqa: BLE001 - a changed constructor is one more thing to report
            problems.append(f"{name} could not be built to check its {what} ({type(e).__name__}: {e})")
            continue
        missing = [a for a in (*marker, *attrs) if not hasattr(probe, a)]
        if missing:
            problems.append(f"{name} lacks {missing} ({what})")
    return problems


def _codec_state_problems() -> list[str]:
    return _probe_problems("codec_state", "per-row codec state", marker=("reset_state",))


def _codec_layer_problems() -> list[str]:
    return _probe_problems("codec_layers", "the layer codec_fast.py replaces on a CPU")


def codec_state_attrs() -> tuple[str, ...]:
    """The attribute names of the codec's streaming state (codec_stream.py keeps them per row)."""
    return tuple(dict.fromkeys(a for attrs in REQUIRED_INTERNALS["codec_state"].values() for a in attrs))


def behind_compile(decoder: Any) -> Any:
    """The decoder module itself: mlx-audio's loader wraps it in mx.compile, a wrapper through which
    its instance and class attributes read, not its submodules and lists (its dict's items)."""
    return getattr(getattr(decoder, "streaming_step", None), "__self__", decoder)


def _unkept_codec_state(decoder: Any) -> list[str]:
    """A loaded decoder's stateful modules (with ``reset_state``) that hold none of the known state."""
    decoder = behind_compile(decoder)
    attrs = codec_state_attrs()
    modules = [m for _, m in decoder.named_modules() if hasattr(m, "reset_state")]
    bare = sorted({type(m).__name__ for m in modules if not any(hasattr(m, a) for a in attrs)})
    return [f"Model.speech_tokenizer.decoder's stateful modules {bare} hold none of {list(attrs)}"] if bare else []


def _attribute_problems(model: Any) -> list[str]:
    speech_tokenizer: Any = getattr(model, "speech_tokenizer", None)  # mlx-audio's modules: untyped
    predictor: Any = getattr(getattr(model, "talker", None), "code_predictor", None)
    try:
        caches = list(model.talker.code_predictor.make_cache())
        talker_caches = list(model.talker.make_cache())
    except AttributeError:
        caches = talker_caches = []  # reported through the signature checks
    owners = {
        "Model": [model],
        "Model.speech_tokenizer": [speech_tokenizer] if speech_tokenizer is not None else [],
        "Model.speech_tokenizer.decoder": (
            [behind_compile(speech_tokenizer.decoder)] if hasattr(speech_tokenizer, "decoder") else []
        ),
        "Model.talker": [model.talker] if hasattr(model, "talker") else [],
        "Model.talker.code_predictor": [predictor] if predictor is not None else [],
        "Model.talker.code_predictor.model": [predictor.model] if hasattr(predictor, "model") else [],
        "Model.talker.code_predictor.make_cache()[i]": caches,
        "Model.talker.make_cache()[i]": talker_caches,
    }
    problems = []
    for name, attrs in REQUIRED_INTERNALS["attributes"].items():
        if not owners[name]:
            problems.append(f"{name} is missing")
            continue
        missing = sorted({a for obj in owners[name] for a in attrs if not hasattr(obj, a)})
        if missing:
            problems.append(f"{name} lacks {missing}")
    if hasattr(speech_tokenizer, "decoder"):
        problems += _unkept_codec_state(speech_tokenizer.decoder)
        problems += structure_problems(speech_tokenizer.decoder)
    return problems


def check_internals(model: Any = None) -> None:
    """Raise InternalsChanged naming every listed internal that is gone or changed (instance
    attributes too when a loaded `model` is given)."""
    problems = _signature_problems() + _field_problems() + _codec_state_problems() + _codec_layer_problems()
    problems += window_problems(
        _lookup("speech_tokenizer.DecoderTransformer"), _lookup("config.Qwen3TTSTokenizerDecoderConfig")
    )
    if model is not None:
        problems += _attribute_problems(model)
    if problems:
        raise InternalsChanged(
            f"mlx-audio {installed_version()}'s Qwen3-TTS internals changed (narrate is written against "
            f"{TESTED_VERSION}); narrate's batched synthesis needs updating: " + "; ".join(problems)
        )


def installed_version() -> str:
    try:
        return version("mlx-audio")
    except PackageNotFoundError:
        return "(version unknown)"


@contextlib.contextmanager
def shadow(obj: Any, name: str, value: Any) -> Iterator[None]:
    """Set an instance attribute for the duration of the block, then restore what was there."""
    missing = object()
    previous = obj.__dict__.get(name, missing)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if previous is missing:
            delattr(obj, name)
        else:
            setattr(obj, name, previous)


class VoiceRows:
    """Each row's own voice for mlx-audio's prefill builders (see the module docstring). ``speaker``
    gives a row's speaker argument (a cloned row's tag, or the preset's name); while ``active``,
    mlx-audio builds the rows with them. One per synthesis: it keeps one placeholder per distinct
    embedding."""

    def __init__(self, model: Any):
        self.model = model
        self._clones: list[tuple[mx.array, mx.array]] = []  # (placeholder, embedding)

    def _index(self, embedding: mx.array) -> int:
        for i, (_, known) in enumerate(self._clones):
            if known is embedding:
                return i
        self._clones.append((mx.zeros((PLACEHOLDER_REFERENCE_SAMPLES,), dtype=mx.float32), embedding))
        return len(self._clones) - 1

    def speaker(self, embedding: mx.array | None, preset: str | None) -> str | None:
        """The speaker argument of a row: a clone's tag (its `embedding`), else the `preset` (or None)."""
        return preset if embedding is None else f"{CLONE_SPEAKER}{self._index(embedding)}"

    def _embedding(self, audio: mx.array) -> mx.array:
        for placeholder, embedding in self._clones:
            if placeholder is audio:
                return embedding
        raise InternalsChanged("mlx-audio asked for the speaker embedding of a reference narrate did not hand it")

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """While active, the model builds a cloned row from its own cached embedding."""
        inner = self.model._prepare_generation_inputs

        def per_row(
            text: str,
            language: str = "auto",
            speaker: str | None = None,
            ref_audio: Any = None,
            ref_text: str | None = None,
            instruct: str | None = None,
        ) -> Any:
            if isinstance(speaker, str) and speaker.startswith(CLONE_SPEAKER):
                ref_audio, speaker = self._clones[int(speaker.removeprefix(CLONE_SPEAKER))][0], None
            return inner(
                text, language=language, speaker=speaker, ref_audio=ref_audio, ref_text=ref_text, instruct=instruct
            )

        def cached(audio: mx.array, sr: int = 24000) -> mx.array:
            return self._embedding(audio)

        with (
            shadow(self.model, "extract_speaker_embedding", cached),
            shadow(self.model, "_prepare_generation_inputs", per_row),
        ):
            yield
