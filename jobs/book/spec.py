"""The job spec: the only argument of a narration job, plain JSON (ids and settings)."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from math import ceil

from narrate.jobs.book.voice import BadVoiceRef, VoiceRef
from narrate.jobs.documents.voicing import NARRATOR
from narrate.jobs.settings import MAX_FRAMES_CAP, MAX_PAUSE_MS, default

SUBTITLE_FORMATS = ("srt", "vtt", "json")
MAX_CAST = 64  # voices of one book besides its narrator
LABEL = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}(:[a-z0-9][a-z0-9_-]{0,63})?")  # alice, alice:whisper
SPLITS = ("", "chapters", "chapters+book")


class BadSpec(ValueError):
    """A job spec no submit makes (it was written to Redis by something else, or damaged)."""


@dataclass(frozen=True)
class JobSpec:
    document: str  # document id in the store
    voice: str  # a sample's sha256 in the store, preset:NAME or design (jobs.book.voice.VoiceRef.spec_voice)
    output: str  # path relative to the worker's output root
    model: str | None = None  # None: the worker's NARRATE_MODEL
    quant: str | None = None  # None: the model's default (see narrate.worker.engine.models)
    seed: int = default("seed")
    max_frames: int = default("max_frames")
    sentence_pause_ms: int = default("sentence_pause_ms")
    paragraph_pause_ms: int = default("paragraph_pause_ms")
    overwrite: bool = False  # may replace a file at the output path that narrate did not write
    lexicon: list[list[str]] = field(default_factory=list)  # [[word, spoken form], ...] (jobs.documents.lexicon)
    # How the book is put together and what is written beside it (jobs/audio/assemble.py):
    chapter_pause_ms: int = default("chapter_pause_ms")  # silence before a chapter
    loudness: float | None = -19.0  # integrated loudness target (LUFS); None: samples as synthesized
    subtitles: str = ""  # "srt,vtt,json": files beside the audio with its stem
    narrator: str | None = None
    author: str | None = None  # None: the document's
    year: str | None = None
    cover: str | None = None  # sha256 of the cover image in the store (None: the document's, if any)
    split: str = ""  # "", "chapters" (one file per chapter only) or "chapters+book"
    max_part_hours: float | None = None  # the book file in parts of at most this long, at chapter boundaries
    instruct: str | None = None  # a preset speaker's style instruction (jobs.book.voice)
    # A cast's voices besides the narrator (the voice above): label -> {"voice": VoiceRef.spec_voice,
    # "instruct": str | None, "seed": int | None}; labels as the document's (jobs.documents.voicing).
    cast: dict[str, dict] | None = None
    speaker_pause_ms: int = default("speaker_pause_ms")  # where the voice changes within a paragraph
    library: str | None = None  # `--library`: the worker exports the finished book into this folder (jobs/library)
    library_layout: str = "abs"
    title: str | None = None  # `--title` (None: the document's)
    series: str | None = None  # `--series "Name #2"` (None: the document's)
    abs_url: str | None = None  # `--abs-url`: an Audiobookshelf server told about it (the token stays on the worker)

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
        data = asdict(self)
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
        for name in ("title", "series"):
            if data[name] is None:
                del data[name]
        return data

    @classmethod
    def from_json(cls, data: dict) -> JobSpec:
        fields = set(cls.__dataclass_fields__)
        unknown = set(data) - fields
        if unknown:
            raise BadSpec(f"unknown job spec fields: {sorted(unknown)}")
        try:
            spec = cls(**data)
        except TypeError as e:
            raise BadSpec(f"job spec: {e}") from None
        spec.check()
        return spec

    def check(self) -> None:
        """Every value within what a submit can make (the worker reads the spec from Redis, which
        anyone with access to the server can write): raises BadSpec naming the field."""

        def whole(name: str, low: int, high: int) -> None:
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
                raise BadSpec(f"job spec: {name} {v!r} is not a whole number from {low} to {high}")

        for name in ("document", "voice", "output"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise BadSpec(f"job spec: {name} {getattr(self, name)!r} is not a name")
        try:
            ref = self.voice_ref
        except BadVoiceRef as e:
            raise BadSpec(f"job spec: {e}") from None
        if ref.kind == "design":
            raise BadSpec("job spec: a book is never read in a designed voice (keep a clip of it: narrate voice keep)")
        whole("seed", 0, 2**63 - 1)
        whole("max_frames", 1, MAX_FRAMES_CAP)
        for name in ("sentence_pause_ms", "paragraph_pause_ms", "chapter_pause_ms"):
            whole(name, 0, MAX_PAUSE_MS)
        if self.loudness is not None and not (
            isinstance(self.loudness, int | float) and math.isfinite(self.loudness) and -40 <= self.loudness <= -5
        ):
            raise BadSpec(f"job spec: loudness {self.loudness!r} is not a LUFS target from -40 to -5")
        if not isinstance(self.subtitles, str) or not set(filter(None, self.subtitles.split(","))) <= set(
            SUBTITLE_FORMATS
        ):
            raise BadSpec(f"job spec: subtitles {self.subtitles!r} (srt, vtt, json)")
        if self.split not in SPLITS:
            raise BadSpec(f"job spec: split {self.split!r}")
        hours = self.max_part_hours
        if hours is not None and not (isinstance(hours, int | float) and math.isfinite(hours) and hours > 0):
            raise BadSpec(f"job spec: max_part_hours {hours!r}")
        if not isinstance(self.lexicon, list) or not all(
            isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e) for e in self.lexicon
        ):
            raise BadSpec("job spec: lexicon is not a list of [word, spoken form] pairs")
        whole("speaker_pause_ms", 0, MAX_PAUSE_MS)
        self._check_cast()
        if self.library is not None and not (
            isinstance(self.library, str)
            and self.library.startswith("/")
            and len(self.library) < 4096
            and "\0" not in self.library
        ):
            raise BadSpec(f"job spec: library {str(self.library)[:80]!r} is not an absolute path")
        if self.library_layout not in ("abs", "plex", "flat"):
            raise BadSpec(f"job spec: library_layout {self.library_layout!r}")
        if self.abs_url is not None and not (
            isinstance(self.abs_url, str)
            and len(self.abs_url) < 2048
            and self.abs_url.startswith(("http://", "https://"))
        ):
            raise BadSpec("job spec: abs_url is not an http(s) address")

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


def job_timeout(budgets: list[int], runaway_retries: int = 1) -> int:
    """A finite RQ job timeout from the document size: 0.25 s per budgeted frame (worst case on
    a CPU), times the attempts a runaway sentence may take."""
    return 600 + ceil(sum(budgets) * 0.25 * (1 + runaway_retries))
