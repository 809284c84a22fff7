"""The job spec: the only argument of a narration job, plain JSON (ids and settings)."""

from __future__ import annotations

import re
from math import ceil
from typing import Annotated, Literal

from narrate.jobs.book.voice import BadVoiceRef, VoiceRef
from narrate.jobs.constraints import (
    READALONG_FORMATS,
    SUBTITLE_FORMATS,
    Frames,
    Hours,
    Layout,
    Lufs,
    PauseMs,
    Retakes,
    Seed,
    format_list,
)
from narrate.jobs.documents.voicing import NARRATOR
from narrate.jobs.settings import default
from narrate.jobs.xmltext import xml_text
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

MAX_CAST = 64  # voices of one book besides its narrator
DEFAULT_RETAKES = 2  # the proof pass's takes of a flagged sentence besides its first, unless `--retakes` says
MAX_OVERRIDES = 10_000  # sentences a redo may change or accept
MAX_OVERRIDE_TEXT = 4000  # characters of a sentence's corrected text
LABEL = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}(:[a-z0-9][a-z0-9_-]{0,63})?")  # alice, alice:whisper


class BadSpec(ValueError):
    """A job spec no submit makes (it was written to Redis by something else, or damaged)."""


def _formats(allowed: tuple[str, ...]) -> AfterValidator:
    """A list of `allowed`'s formats, checked (kept as it was written)."""

    def check(value: str) -> str:
        format_list(value, allowed)
        return value

    return AfterValidator(check)


def _recognizer(value: str) -> str:
    if "\0" in value or not (value == "auto" or value.startswith("/") or re.fullmatch(r"[\w.-]+/[\w.-]+", value)):
        raise ValueError("is not auto, a Hugging Face id or an absolute path")
    return value


def _absolute(value: str) -> str:
    if not value.startswith("/") or "\0" in value:
        raise ValueError("is not an absolute path")
    return value


def corrected(text: str) -> str:
    """A redo's corrected sentence as it is spoken and written into the book's captions, manifests and EPUB: the
    characters XML refuses (NUL, U+FFFF...) and the bidi controls taken out (jobs/xmltext.py), whitespace as
    single spaces. Empty: nothing to say."""
    return " ".join(xml_text(text).split())


def _clean_text(value: str) -> str:
    """A corrected sentence in a spec is already ``corrected`` (the redo cleans what it is given: a forged spec's
    raw text would reach the captions, manifests and EPUB)."""
    if value != corrected(value):
        raise ValueError("a corrected text holds control characters or runs of whitespace")
    return value


class _Override(BaseModel):
    """A sentence's override in a redo (strict, like the spec)."""

    model_config = ConfigDict(strict=True)
    seed: Seed | None = None
    text: Annotated[str, Field(min_length=1, max_length=MAX_OVERRIDE_TEXT), AfterValidator(_clean_text)] | None = None
    lexicon: list[Annotated[list[Annotated[str, Field(max_length=200)]], Field(min_length=2, max_length=2)]] | None = (
        None
    )


# The bounds of a spec's values are the request model's (jobs/constraints.py), checked strictly: the worker reads
# the spec from Redis, which anyone with access to the server can write (a forged spec's text is not a number).
_Name = Annotated[str, Field(min_length=1)]
_Path = Annotated[str, Field(min_length=1, max_length=4095)]


class JobSpec(BaseModel):
    """The job's one argument, plain JSON: ids in the store and the validated request. Building one checks it
    (a value no submit makes raises, naming the field: ``from_json`` says BadSpec)."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    document: _Name  # document id in the store
    voice: _Name  # a sample's sha256 in the store, preset:NAME or design (jobs.book.voice.VoiceRef.spec_voice)
    output: _Name  # path relative to the worker's output root
    model: str | None = None  # None: the worker's NARRATE_MODEL
    quant: str | None = None  # None: the model's default (see narrate.worker.engine.models)
    seed: Seed = default("seed")
    max_frames: Frames = default("max_frames")
    sentence_pause_ms: PauseMs = default("sentence_pause_ms")
    paragraph_pause_ms: PauseMs = default("paragraph_pause_ms")
    overwrite: bool = False  # may replace a file at the output path that narrate did not write
    # [[word, spoken form], ...] (jobs.documents.lexicon)
    lexicon: list[Annotated[list[str], Field(min_length=2, max_length=2)]] = Field(default_factory=list)
    # How the book is put together and what is written beside it (jobs/audio/assemble.py):
    chapter_pause_ms: PauseMs = default("chapter_pause_ms")  # silence before a chapter
    loudness: Lufs | None = -19.0  # integrated loudness target (LUFS); None: samples as synthesized
    subtitles: Annotated[str, _formats(SUBTITLE_FORMATS)] = ""  # "srt,vtt,json": files beside the audio
    narrator: str | None = None
    author: str | None = None  # None: the document's
    year: str | None = None
    cover: str | None = None  # sha256 of the cover image in the store (None: the document's, if any)
    split: Literal["", "chapters", "chapters+book"] = ""  # "chapters": one file per chapter only
    max_part_hours: Hours | None = None  # the book file in parts of at most this long, at chapter boundaries
    instruct: str | None = None  # a preset speaker's style instruction (jobs.book.voice)
    # A cast's voices besides the narrator (the voice above): label -> {"voice": VoiceRef.spec_voice,
    # "instruct": str | None, "seed": int | None}; labels as the document's (jobs.documents.voicing).
    cast: dict[str, dict] | None = None
    speaker_pause_ms: PauseMs = default("speaker_pause_ms")  # where the voice changes within a paragraph
    # `--library`: the worker exports the finished book into this folder (jobs/library)
    library: Annotated[_Path, AfterValidator(_absolute)] | None = None
    library_layout: Layout = "abs"
    title: str | None = None  # `--title` (None: the document's)
    series: str | None = None  # `--series "Name #2"` (None: the document's)
    # `--abs-url`: an Audiobookshelf server told about it (the token stays on the worker)
    abs_url: Annotated[str, Field(max_length=2047, pattern=r"^https?://")] | None = None
    # `--proof`: "auto", a recognizer's hub id or absolute dir; None: off (jobs/proof)
    proof: Annotated[_Path, AfterValidator(_recognizer)] | None = None
    retakes: Retakes = DEFAULT_RETAKES  # `--retakes`: with proof, takes of a flagged sentence besides its first
    readalong: Annotated[str, _formats(READALONG_FORMATS)] = ""  # "epub,manifest,w3c": read-along files
    # `--word-timings`: "auto", an aligner's hub id or absolute dir; None: off
    word_timings: Annotated[_Path, AfterValidator(_recognizer)] | None = None
    # A redo (`narrate redo`, jobs/api/redo_request.py): sentence index (0-based, as text) -> {"seed": int, "text": str,
    # "lexicon": [[word, spoken form], ...]}, each key optional; the plan applies them (jobs/book/plan.py).
    overrides: dict[str, dict] | None = None
    accepted: list[int] | None = None  # sentence indices (0-based) whose kept take a person accepted by ear

    def voice_refs(self) -> dict[str, VoiceRef]:
        """Every voice of the job by label: the narrator's and the cast's."""
        refs = {NARRATOR: self.voice_ref}
        for label, v in (self.cast or {}).items():
            refs[label] = VoiceRef.from_spec(v.get("voice"), v.get("instruct"))
        return refs

    def seed_of(self, label: str) -> int:
        """The job seed of a voice: its own (a cast's), else the job's."""
        seed = ((self.cast or {}).get(label) or {}).get("seed")
        return int(seed) if seed is not None else self.seed

    @property
    def voice_ref(self) -> VoiceRef:
        return VoiceRef.from_spec(self.voice, self.instruct)

    def to_json(self) -> dict:
        """The spec as the job's argument: what is unset is left out where a spec made before its field existed
        had none, so that the same request keeps its job id."""
        data = self.model_dump()
        if not data["lexicon"]:
            del data["lexicon"]  # the same spec (and job id) as before lexicons existed
        if data["instruct"] is None:
            del data["instruct"]  # likewise before preset voices
        if data["cast"] is None:
            del data["cast"], data["speaker_pause_ms"]  # and before casts
        if data["library"] is None:
            del data["library"], data["library_layout"]  # and before library exports
        if data["abs_url"] is None:
            del data["abs_url"]
        if data["proof"] is None:
            del data["proof"], data["retakes"]  # and before the proof pass
        for name in ("title", "series"):
            if data[name] is None:
                del data[name]
        if not data["readalong"]:
            del data["readalong"]  # and before read-along books
        for name in ("overrides", "accepted", "word_timings"):
            if not data[name]:
                del data[name]  # and before redos
        return data

    def sentence_overrides(self) -> dict[int, dict]:
        """The overrides by sentence index (checked: ``check``)."""
        return {int(k): v for k, v in (self.overrides or {}).items()}

    @classmethod
    def from_json(cls, data: dict) -> JobSpec:
        """A spec read back (from Redis): BadSpec naming the field for anything a submit does not make."""
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            first = e.errors()[0]
            said = (first.get("ctx") or {}).get("error")
            if isinstance(said, BadSpec):  # the checks below word their own messages
                raise BadSpec(str(said)) from None
            name = ".".join(str(x) for x in first.get("loc") or ()) or "?"
            if first.get("type") == "extra_forbidden":
                raise BadSpec(f"unknown job spec fields: {sorted(set(data) - set(cls.model_fields))}") from None
            value = str(first.get("input"))[:80]
            raise BadSpec(f"job spec: {name} {value!r}: {first.get('msg', 'not valid')}") from None

    @model_validator(mode="after")
    def _check(self) -> JobSpec:
        """What the field types do not say: the voice a spec names, its cast and a redo's changes (BadSpec)."""
        try:
            ref = self.voice_ref
        except BadVoiceRef as e:
            raise BadSpec(f"job spec: {e}") from None
        if ref.kind == "design":
            raise BadSpec("job spec: a book is never read in a designed voice (keep a clip of it: narrate voice keep)")
        self._check_cast()
        self._check_redo()
        return self

    def _check_redo(self) -> None:
        if self.overrides is not None:
            if not isinstance(self.overrides, dict) or len(self.overrides) > MAX_OVERRIDES:
                raise BadSpec(f"job spec: overrides is not a table of at most {MAX_OVERRIDES} sentences")
            for key, value in self.overrides.items():
                if not isinstance(key, str) or not re.fullmatch(r"0|[1-9][0-9]{0,6}", key):
                    raise BadSpec(f"job spec: override {key!r:.20} is not a sentence's index")
                if not isinstance(value, dict) or not value or set(value) - {"seed", "text", "lexicon"}:
                    raise BadSpec(f"job spec: override {key} is not {{seed, text, lexicon}}")
                try:
                    _Override.model_validate(value)
                except ValidationError as e:
                    first = e.errors()[0]
                    name = str(first["loc"][0]) if first.get("loc") else "?"
                    raise BadSpec(f"job spec: override {key}: {name}: {first.get('msg', 'not valid')}") from None
        if self.accepted is not None:
            ok = isinstance(self.accepted, list) and len(self.accepted) <= MAX_OVERRIDES
            if not ok or not all(type(i) is int and 0 <= i < 10**7 for i in self.accepted):
                raise BadSpec("job spec: accepted is not a list of sentence indices")

    def _check_cast(self) -> None:
        if self.cast is None:
            return
        if not isinstance(self.cast, dict) or not self.cast or len(self.cast) > MAX_CAST:
            raise BadSpec(f"job spec: cast is not a table of 1-{MAX_CAST} voices")
        for label, v in self.cast.items():
            if not isinstance(label, str) or not LABEL.fullmatch(label) or label == NARRATOR:
                raise BadSpec(f"job spec: cast label {label!r} is not a voice's label")
            if not isinstance(v, dict) or set(v) - {"voice", "instruct", "seed"}:
                raise BadSpec(f"job spec: cast voice {label!r} is not {{voice, instruct, seed}}")
            seed = v.get("seed")
            if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63):
                raise BadSpec(f"job spec: cast voice {label!r} has seed {seed!r}")
            try:
                ref = VoiceRef.from_spec(v.get("voice"), v.get("instruct"))
            except BadVoiceRef as e:
                raise BadSpec(f"job spec: cast voice {label!r}: {e}") from None
            if ref.kind == "design":
                raise BadSpec(f"job spec: cast voice {label!r} is a design (keep a clip of it: narrate voice keep)")


def job_timeout(budgets: list[int], runaway_retries: int = 1, retakes: int = 0) -> int:
    """A finite RQ job timeout from the document size: 0.25 s per budgeted frame (worst case on
    a CPU), times the attempts a runaway sentence may take and the proof pass's retakes."""
    return 600 + ceil(sum(budgets) * 0.25 * (1 + runaway_retries + retakes))
