"""The job spec: the only argument of a narration job, plain JSON (ids and settings)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from math import ceil


@dataclass(frozen=True)
class JobSpec:
    document: str  # document id in the store
    voice: str  # voice sha256 in the store
    output: str  # path relative to the worker's output root
    model: str | None = None  # None: the worker's NARRATE_MODEL
    quant: str | None = None  # None: the model's default (see narrate.worker.engine.models)
    seed: int = 0
    max_frames: int = 2048
    sentence_pause_ms: int = 250
    paragraph_pause_ms: int = 750
    overwrite: bool = False  # may replace a file at the output path that narrate did not write
    lexicon: list[list[str]] = field(default_factory=list)  # [[word, spoken form], ...] (jobs.documents.lexicon)
    # How the book is put together and what is written beside it (jobs/audio/assemble.py):
    chapter_pause_ms: int = 2000  # silence before a chapter
    loudness: float | None = -19.0  # integrated loudness target (LUFS); None: samples as synthesized
    subtitles: str = ""  # "srt,vtt,json": files beside the audio with its stem
    narrator: str | None = None
    author: str | None = None  # None: the document's
    year: str | None = None
    cover: str | None = None  # sha256 of the cover image in the store (None: the document's, if any)
    split: str = ""  # "", "chapters" (one file per chapter only) or "chapters+book"
    max_part_hours: float | None = None  # the book file in parts of at most this long, at chapter boundaries

    def to_json(self) -> dict:
        data = asdict(self)
        if not data["lexicon"]:
            del data["lexicon"]  # the same spec (and job id) as before lexicons existed
        return data

    @classmethod
    def from_json(cls, data: dict) -> JobSpec:
        fields = set(cls.__dataclass_fields__)
        unknown = set(data) - fields
        if unknown:
            raise ValueError(f"unknown job spec fields: {sorted(unknown)}")
        return cls(**data)


def job_timeout(budgets: list[int], runaway_retries: int = 1) -> int:
    """A finite RQ job timeout from the document size: 0.25 s per budgeted frame (worst case on
    a CPU), times the attempts a runaway sentence may take."""
    return 600 + ceil(sum(budgets) * 0.25 * (1 + runaway_retries))
