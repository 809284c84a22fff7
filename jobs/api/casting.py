"""A book read by a cast of voices (`--voice alice=NAME|FILE`, `--cast cast.toml`, `--markup`,
`--dialogue-voice`), for `submit` and `run`: the cast declared (jobs.cast), every voice of it chosen
as `--voice` is (jobs.voices.choice: a file, a saved voice, a preset speaker), all before anything
is stored or enqueued. One plain `--voice` (no cast options) is a book of one voice, exactly as
before: the same job spec and id."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import redis
from narrate.jobs.api.options import Options
from narrate.jobs.audio.samples import Voice
from narrate.jobs.cast.declare import build_cast
from narrate.jobs.cast.reading import DIALOGUE, CastReading, joined_dialogue, make_reading, read_cast
from narrate.jobs.cast.summary import cast_line
from narrate.jobs.cast.undeclared import warnings
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.voicing import NARRATOR
from narrate.jobs.errors import BadInput
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.settings import Settings
from narrate.jobs.voices.choice import VoiceChoice, choose


@dataclass(frozen=True)
class CastChoice:
    """How a cast's voices are found in a document, and each of them chosen (by label)."""

    reading: CastReading
    voices: dict[str, VoiceChoice]  # every member and variant, not the narrator
    narrator_seed: int | None = None

    def seed_of(self, label: str) -> int | None:
        return self.reading.cast.seed_of(label)


def is_plain(voice_args: Sequence[str], cast_file: Path | None, markup: str | None, dialogue_voice: str | None) -> bool:
    """One `--voice` and no cast option: a book of one voice."""
    return len(voice_args) == 1 and "=" not in voice_args[0] and not (cast_file or markup or dialogue_voice)


def choose_cast(
    r: redis.Redis | None,
    settings: Settings,
    voice_args: Sequence[str],
    options: Options,
    instruct: str | None = None,
    cast_file: Path | None = None,
    markup: str | None = None,
    dialogue_voice: str | None = None,
    strict: bool = False,
) -> tuple[VoiceChoice, CastChoice | None]:
    """(the narrator's voice, the cast: None for a book of one voice). Raises BadInput naming the
    first voice that cannot be had (its label with it)."""
    ffmpeg = ffmpeg_exe(settings.ffmpeg)
    if not voice_args and cast_file is None:
        raise BadInput("no voice given: --voice FILE|NAME (the narrator), or a cast (--cast cast.toml)")
    if is_plain(voice_args, cast_file, markup, dialogue_voice):
        return choose(r, voice_args[0], options.model, ffmpeg, instruct, settings.model), None
    declared = build_cast(voice_args, cast_file)
    reading = make_reading(declared, markup, dialogue_voice, strict)
    cast = reading.cast
    if cast.narrator is None:
        raise BadInput(
            "the cast has no narrator: add --voice FILE|NAME (no NAME= before it), or narrator = ... in cast.toml"
        )
    narrator = choose(r, cast.narrator, options.model, ffmpeg, instruct, settings.model)
    voices = {}
    for label, arg in cast.voices.items():
        try:
            voices[label] = choose(r, arg, options.model, ffmpeg, None, settings.model)
        except BadInput as e:
            if dialogue_voice is not None and label == DIALOGUE and joined_dialogue(declared, reading):
                raise BadInput(f"--dialogue-voice {dialogue_voice[:60]!r}: {e}", param="dialogue_voice") from None
            raise BadInput(f"cast voice {label!r}: {e}", param="cast_voice") from None
    return narrator, CastChoice(reading, voices, cast.seed_of(NARRATOR))


def spec_cast(choice: CastChoice, used: set[str]) -> dict[str, dict] | None:
    """The job spec's cast: the voices the document uses besides the narrator (None: only the narrator)."""
    labels = sorted(label for label in used if label != NARRATOR)
    if not labels:
        return None
    missing = [label for label in labels if label not in choice.voices]
    if missing:
        raise BadInput(f"the document names voice {missing[0]!r}, which the cast does not declare")
    out = {}
    for label in labels:
        ref = choice.voices[label].ref
        out[label] = {"voice": ref.spec_voice, "instruct": ref.instruct, "seed": choice.seed_of(label)}
    return out


@dataclass(frozen=True)
class CastDocument:
    """A document read with a cast: its job spec's cast, the samples to store, the cast in one line."""

    document: Document
    spec: dict[str, dict] | None
    samples: tuple[Voice, ...]
    line: str
    warnings: tuple[str, ...] = ()  # tag-like brackets that name nobody in the cast (read as text)


def read_with_cast(
    settings: Settings, documents: Sequence[Path], options: Options, cast: CastChoice
) -> list[CastDocument]:
    """Read each document with the cast (raises BadInput naming the first bad one: with `strict`, a
    tag that names nobody)."""
    out = []
    for path in documents:
        doc, report = read_cast(Path(path), cast.reading, options.reading)
        line = cast_line(doc, cast.reading.cast, report, settings.speaker_pause_ms / 1000)
        said = tuple(warnings(Path(path), doc, report.unknown, cast=True))
        out.append(replace(cast_document(doc, cast, line), warnings=said))
    return out


def cast_document(doc: Document, cast: CastChoice, line: str = "") -> CastDocument:
    """A document already read with the cast (a schedule's tick reads its files itself)."""
    used = set(doc.sentence_voices)
    samples = tuple(c.sample for label, c in cast.voices.items() if label in used and c.sample is not None)
    return CastDocument(doc, spec_cast(cast, used), samples, line)
