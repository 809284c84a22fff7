"""Which voices a loaded model speaks, and the voice of one row of a batch (``RowVoice``).

A Qwen3-TTS model speaks the voices of its kind only (``LoadedModel.kind``):

- Base: a *clone* of a voice sample, from the sample's x-vector (voice_cache.py: cached, in the
  talker's dtype);
- CustomVoice: a *preset* speaker (``talker_config.spk_id``: mlx-audio puts the speaker's codec
  embedding where Base puts the x-vector), with an optional style instruction that only the 1.7B
  models follow (mlx-audio drops it on 0.6B: ``LoadedModel.follows_instruct``);
- VoiceDesign: a *design*, a voice made from a description (the instruction).

``voice_for`` turns a job's ``VoiceRef`` into the engine's ``VoiceEmbedding`` (its value a
``RowVoice``) or refuses it with a one-line ``BadInput`` that says what the model speaks instead
and which model to use; ``check`` applies the same rules to a ``RowVoice`` handed to the engine
directly (the benchmark, the tests). An instruction the model ignores is no error: a warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import mlx.core as mx
from narrate.jobs.book.synthesis import VoiceEmbedding
from narrate.jobs.book.voice import KINDS, VoiceRef
from narrate.jobs.errors import BadInput
from narrate.jobs.settings import DEFAULT_MODEL
from narrate.jobs.voices.model_offer import DEFAULT_CUSTOM_VOICE, DEFAULT_VOICE_DESIGN
from narrate.worker.engine.models import KIND_NAMES, LoadedModel

# The published model of each kind, suggested when a model cannot speak a voice (VoiceDesign
# exists in 1.7B only): spelled as the defaults are, in the README and the other messages.
PUBLISHED = {"base": DEFAULT_MODEL, "custom_voice": DEFAULT_CUSTOM_VOICE, "voice_design": DEFAULT_VOICE_DESIGN}
HUB_KIND = re.compile(r"-(Base|CustomVoice|VoiceDesign)(?=-|$)")
MAX_LISTED_SPEAKERS = 20


@dataclass(frozen=True, eq=False)  # eq=False: compared (and hashed) by identity, like the arrays they hold
class RowVoice:
    """The voice of one row, as the decode loop builds its prefill: exactly one of a clone's
    x-vector (``embedding``, in the talker's dtype), a preset ``speaker`` (lower case) with an
    optional ``instruct``, or a design's description (``instruct``)."""

    kind: str  # clone | preset | design
    embedding: mx.array | None = None
    speaker: str | None = None
    instruct: str | None = None

    @classmethod
    def clone(cls, embedding: mx.array) -> RowVoice:
        return cls("clone", embedding=embedding)

    @classmethod
    def preset(cls, speaker: str, instruct: str | None = None) -> RowVoice:
        return cls("preset", speaker=speaker.lower(), instruct=instruct or None)

    @classmethod
    def design(cls, description: str) -> RowVoice:
        return cls("design", instruct=description)


def as_row_voice(voice: RowVoice | mx.array) -> RowVoice:
    """A RowVoice as is; a bare x-vector as a clone."""
    return voice if isinstance(voice, RowVoice) else RowVoice.clone(voice)


def suggest(source: str, kind: str) -> str:
    """The --model that speaks `kind`: this hub id with the kind's suffix, else the published one."""
    if HUB_KIND.search(source) and not source.startswith("/"):
        other = HUB_KIND.sub(f"-{KIND_NAMES[kind]}", source)
        return other.replace("-0.6B-", "-1.7B-") if kind == "voice_design" else other
    return PUBLISHED[kind]


def _speakers(loaded: LoadedModel) -> str:
    listed = loaded.speakers[:MAX_LISTED_SPEAKERS]
    more = len(loaded.speakers) - len(listed)
    return ", ".join(listed) + (f" and {more} more" if more else "")


def _what_it_speaks(loaded: LoadedModel) -> str:
    if loaded.kind == "custom_voice":
        return f"it speaks its preset speakers ({_speakers(loaded)})"
    if loaded.kind == "voice_design":
        return "it makes a voice from a description"
    return "it clones voice samples"


def refusal(loaded: LoadedModel, kind: str, speaker: str | None = None, instruct: str | None = None) -> str | None:
    """Why this model cannot speak the voice (one line), or None if it can."""
    if kind not in KINDS:
        return f"voice kind {kind!r} is none of {', '.join(KINDS)}"
    model = f"model {loaded.resolved.source}"
    named = f"{model} is a {KIND_NAMES[loaded.kind]} model: {_what_it_speaks(loaded)}"
    if kind == "clone" and loaded.kind != "base":
        where = suggest(loaded.resolved.source, "base")
        return f"{named}, not a sample; clone a sample with a Base model (--model {where})"
    if kind == "preset":
        if loaded.kind != "custom_voice":
            where = suggest(loaded.resolved.source, "custom_voice")
            return f"{named} and has no preset speakers; speak a preset with a CustomVoice model (--model {where})"
        if (speaker or "").lower() not in loaded.speakers:
            return f"{model} has no speaker {speaker!r}; its speakers: {_speakers(loaded)}"
    if kind == "design":
        if loaded.kind != "voice_design":
            where = suggest(loaded.resolved.source, "voice_design")
            return f"{named} and designs no voice; design a voice with a VoiceDesign model (--model {where})"
        if not (instruct or "").strip():
            return "a designed voice needs a description of the voice"
    return None


def check(loaded: LoadedModel, voice: RowVoice) -> None:
    """Raise BadInput if the model cannot speak `voice`."""
    why = refusal(loaded, voice.kind, voice.speaker, voice.instruct)
    if why:
        raise BadInput(why)


def ignored_instruct(loaded: LoadedModel) -> str:
    if loaded.kind == "base":
        return f"model {loaded.resolved.source} ignores --instruct (Base models follow no instruction)"
    return f"model {loaded.resolved.source} ignores --instruct (0.6B models follow no instruction)"


def voice_for(
    loaded: LoadedModel, ref: VoiceRef, embedding_of: Callable[[str], tuple[mx.array, bool]]
) -> VoiceEmbedding:
    """The engine's voice for a job's `ref` (`embedding_of`: a sample's sha256 -> its cached x-vector
    and whether the cache had it; called only for a clone on a Base model). Raises BadInput if the
    model cannot speak it; an instruction it would ignore is dropped, with a warning."""
    why = refusal(loaded, ref.kind, ref.speaker, ref.instruct)
    if why:
        raise BadInput(why)
    warning = None
    if ref.instruct and ref.kind != "design" and not loaded.follows_instruct:
        warning = ignored_instruct(loaded)  # logged by the job that asked, with its id
    if ref.kind == "clone":
        if not ref.sample:
            raise BadInput("a cloned voice needs a sample (its sha256)")
        embedding, hit = embedding_of(ref.sample)
        return VoiceEmbedding(RowVoice.clone(embedding), hit, 0 if hit else 1, warning)  # a miss runs the encoder
    if ref.kind == "preset":
        assert ref.speaker is not None  # refusal checked it
        instruct = ref.instruct if loaded.follows_instruct else None
        return VoiceEmbedding(RowVoice.preset(ref.speaker, instruct), True, 0, warning)
    assert ref.instruct is not None  # refusal checked it
    return VoiceEmbedding(RowVoice.design(ref.instruct), True, 0, warning)
