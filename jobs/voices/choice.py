"""``--voice NAME|FILE`` (and ``--instruct``) to the voice a job speaks in, checked before anything
is stored or enqueued:

1. an existing file is a sample (read and normalized here); a saved voice's name is its sample
   (the library's copy). An argument that is both is refused, saying which is which;
2. otherwise a name is a preset speaker when the model is a CustomVoice model (or, with no
   ``--model``, one of Qwen3-TTS's preset names): checked against the model's speakers where this
   host can read them (jobs.voices.model_offer), else by the worker at its first batch;
3. anything else is a one-line error: a missing file, an unknown name (the saved ones listed), a
   preset speaker on a Base model, a sample on a CustomVoice or VoiceDesign model.

A name is resolved here, at submit, to the sample's hash or the speaker: renaming or removing the
voice later never changes a job already queued."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import redis
from narrate.jobs.audio.samples import Voice, read_voice
from narrate.jobs.book.voice import MAX_INSTRUCT_CHARS, VoiceRef
from narrate.jobs.errors import BadInput
from narrate.jobs.voices import voice_library
from narrate.jobs.voices.model_offer import DEFAULT_CUSTOM_VOICE, QWEN_PRESETS, ModelFacts, facts, unknown_speaker
from narrate.jobs.voices.names import is_name


@dataclass(frozen=True)
class VoiceChoice:
    """A voice chosen for a job: what the job's spec names, the sample to store (clones), the name
    it was chosen by (saved voices and presets) and warnings for the person who asked."""

    ref: VoiceRef
    sample: Voice | None = None
    name: str | None = None
    warnings: tuple[str, ...] = ()

    @classmethod
    def of_sample(cls, sample: Voice, name: str | None = None) -> VoiceChoice:
        return cls(VoiceRef.clone(sample.sha256), sample, name)

    def describe(self) -> str:
        return f"{self.name} ({self.ref.describe()})" if self.name else self.ref.describe()


def check_instruct(instruct: str | None) -> str | None:
    if instruct is None:
        return None
    text = instruct.strip()
    if not text:
        raise BadInput("--instruct is empty; describe how to speak, e.g. --instruct 'calm, warm narrator'")
    if len(text) > MAX_INSTRUCT_CHARS:
        raise BadInput(f"--instruct is {len(text)} characters long; keep it to {MAX_INSTRUCT_CHARS}")
    if any(ord(c) < 32 for c in text):
        raise BadInput("--instruct holds a control character or a line break; give one line")
    return text


def choose(
    r: redis.Redis | None,
    arg: str | Path,
    model: str | None,
    ffmpeg: str,
    instruct: str | None = None,
    default_model: str | None = None,
    files: bool = True,
) -> VoiceChoice:
    """The voice `arg` names for a job on `model` (None: the worker's NARRATE_MODEL, taken to be
    `default_model`, this host's NARRATE_MODEL). `r`: the server that holds the library (None:
    files only, no names). `files=False`: `arg` is never read as a path on this host (a name from
    the HTTP API: a saved voice or a preset speaker only). Raises BadInput with one line."""
    text = os.fspath(arg)
    if not text.strip():
        raise BadInput("--voice is empty: give a voice sample file, a saved voice's name or a preset speaker")
    instruct = check_instruct(instruct)
    path = Path(text).expanduser()
    is_file = files and os.path.lexists(path)
    record = voice_library.find(r, text) if r is not None and is_name(text) else None
    model = model or default_model
    known = facts(model)
    if is_file and record is not None:
        raise BadInput(
            f"--voice {text} is both the file {os.path.abspath(path)} and the saved voice {record.name!r}; "
            f"give the file as ./{text} or rename the saved voice (narrate voice rename {record.name} NEW)"
        )
    if is_file:
        return _sample(VoiceChoice.of_sample(read_voice(path, ffmpeg)), model, known, instruct)
    if record is not None:
        assert r is not None
        return _sample(VoiceChoice.of_sample(voice_library.sample(r, record), record.name), model, known, instruct)
    if is_name(text) and _is_preset(text.lower(), known):
        return _preset(text.lower(), model, known, instruct)
    raise _not_found(r, text, model, known, files)


def _is_preset(name: str, known: ModelFacts | None) -> bool:
    if known is not None:
        return known.kind == "custom_voice"
    return name in QWEN_PRESETS


def _sample(choice: VoiceChoice, model: str | None, known: ModelFacts | None, instruct: str | None) -> VoiceChoice:
    if known is not None and known.kind != "base":
        said = "preset speakers" if known.kind == "custom_voice" else "voices made from a description"
        speakers = f" ({', '.join(known.speakers)})" if known.speakers else ""
        raise BadInput(
            f"model {model} is a {known.kind_name} model: it speaks {said}{speakers}, not a sample; "
            "clone a sample with a Base model (--model ...-Base), or choose a preset speaker"
        )
    if instruct is None:
        return choice
    return VoiceChoice(
        choice.ref,
        choice.sample,
        choice.name,
        (
            "--instruct is ignored: a cloned voice (a Base model) follows no instruction; "
            "instructions steer the preset speakers of 1.7B CustomVoice models",
        ),
    )


def _preset(name: str, model: str | None, known: ModelFacts | None, instruct: str | None) -> VoiceChoice:
    warnings: list[str] = []
    if known is not None and known.speakers is not None and name not in known.speakers:
        raise unknown_speaker(str(model), name, known.speakers)
    if instruct is not None and known is not None and not known.follows_instruct:
        warnings.append(f"--instruct is ignored: model {model} does not follow instructions (0.6B models drop them)")
        instruct = None
    return VoiceChoice(VoiceRef.preset(name, instruct), None, name, tuple(warnings))


def _not_found(
    r: redis.Redis | None, text: str, model: str | None, known: ModelFacts | None, files: bool = True
) -> BadInput:
    if not files and not is_name(text):
        return BadInput(
            f"voice {text[:80]!r} is not a voice name; give a saved voice's name (GET /v1/audio/voices), a preset "
            "speaker, or a sample as a data: URL or an upload"
        )
    if not is_name(text) or os.sep in text or "/" in text:
        return BadInput(
            f"voice file {text} does not exist; give a voice sample file, a saved voice or a preset speaker"
        )
    name = text.lower()
    saved = ""
    if r is not None:
        try:
            voice_library.get(r, name)
        except voice_library.VoiceNotFound as e:
            saved = str(e)
    said = saved or f"no saved voice named {name!r}"
    if known is not None and known.kind == "base" and name in QWEN_PRESETS:
        return BadInput(
            f"{said}; {name!r} is a preset speaker, but model {model} is a Base model (it clones samples, it has no "
            f"preset speakers): add --model {DEFAULT_CUSTOM_VOICE}"
        )
    if known is not None and known.kind == "voice_design":
        return BadInput(f"{said}; model {model} is a VoiceDesign model: design a voice with narrate voice design")
    if not files:
        return BadInput(f"{said}; give a saved voice's name, a preset speaker, or a sample as a data: URL or an upload")
    return BadInput(f"{said}, and no file {text} here; give a voice sample file, a saved voice or a preset speaker")
