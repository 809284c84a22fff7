"""Which voice a job speaks in, as its spec carries it (``JobSpec.voice`` and ``JobSpec.instruct``):

- ``clone``: a voice sample, by the sha256 of its normalized audio in the store (a Qwen3-TTS *Base*
  model clones it from its x-vector). The spec's ``voice`` is the bare sha256, as it always was;
- ``preset``: one of a *CustomVoice* model's named speakers (``preset:ryan``), with an optional
  style instruction (``instruct``; only the 1.7B CustomVoice models follow it);
- ``design``: a voice made from a text description by a *VoiceDesign* model (``design``, the
  description in ``instruct``). Only clip jobs use it (`narrate voice design`): a designed voice is
  no stable identity from one sentence to the next, so books are read from a kept clip instead.

``identity`` is what a sentence's audio depends on besides the text and the model: it names the
sample, or the speaker and the instruction, so a resubmitted book reuses its sentences and a
changed instruction renders them again. Nothing here touches a server or imports mlx."""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("clone", "preset", "design")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
SPEAKER = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")  # Qwen3's speakers: ryan, uncle_fu, ono_anna...
MAX_INSTRUCT_CHARS = 1000
PRESET_PREFIX = "preset:"
DESIGN = "design"


class BadVoiceRef(ValueError):
    """A voice in a job spec that no submit makes."""


@dataclass(frozen=True)
class VoiceRef:
    kind: str  # clone | preset | design
    sample: str | None = None  # clone: sha256 of the stored sample
    speaker: str | None = None  # preset: the speaker's name, lower case
    instruct: str | None = None  # preset: a style instruction; design: the voice's description

    @classmethod
    def clone(cls, sha256: str) -> VoiceRef:
        return cls("clone", sample=sha256)

    @classmethod
    def preset(cls, speaker: str, instruct: str | None = None) -> VoiceRef:
        return cls("preset", speaker=speaker.lower(), instruct=instruct or None)

    @classmethod
    def design(cls, description: str) -> VoiceRef:
        return cls("design", instruct=description)

    @property
    def spec_voice(self) -> str:
        """``JobSpec.voice``: the sha256, ``preset:NAME`` or ``design``."""
        if self.kind == "clone":
            assert self.sample is not None
            return self.sample
        if self.kind == "preset":
            return PRESET_PREFIX + (self.speaker or "")
        return DESIGN

    @property
    def identity(self) -> str:
        """What the audio depends on besides text, model and seed (part of every checkpoint key):
        a clone's sha256 alone (the keys of earlier versions stay valid), else the speaker or the
        design with the instruction."""
        if self.kind == "clone":
            return self.spec_voice
        return self.spec_voice + (f"\ninstruct:{self.instruct}" if self.instruct else "")

    @classmethod
    def from_spec(cls, voice: object, instruct: object = None) -> VoiceRef:
        """The voice of a job spec (read from Redis: anything may be there); raises BadVoiceRef."""
        if instruct is not None and (
            not isinstance(instruct, str) or not instruct.strip() or len(instruct) > MAX_INSTRUCT_CHARS
        ):
            raise BadVoiceRef(f"instruct {instruct!r} is not an instruction of 1-{MAX_INSTRUCT_CHARS} characters")
        if not isinstance(voice, str):
            raise BadVoiceRef(f"voice {voice!r} is not a voice")
        if SHA256.match(voice):
            if instruct is not None:
                raise BadVoiceRef("a cloned voice takes no instruct")
            return cls.clone(voice)
        if voice.startswith(PRESET_PREFIX) and SPEAKER.match(voice[len(PRESET_PREFIX) :]):
            return cls.preset(voice[len(PRESET_PREFIX) :], instruct)
        if voice == DESIGN and isinstance(instruct, str):
            return cls.design(instruct)
        raise BadVoiceRef(f"voice {voice!r} is neither a sample's sha256, preset:NAME nor design (with instruct)")

    def describe(self) -> str:
        """For people: ``sample 3f2a9c1b``, ``preset ryan ("calm")``, ``designed from "..."``."""
        if self.kind == "clone":
            return f"sample {(self.sample or '')[:8]}"
        said = f' ("{self.instruct[:60]}")' if self.instruct else ""
        return (
            f"preset {self.speaker}{said}" if self.kind == "preset" else f'designed from "{(self.instruct or "")[:60]}"'
        )
