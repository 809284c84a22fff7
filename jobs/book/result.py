"""The result of a finished narration job, as stored by rq and shown by `status --json`."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Timings:
    wall_s: float  # the whole attempt, model load included
    model_s: float  # getting the engine (load on a cold worker, ~0 when warm)
    first_audio_s: float  # attempt start -> first synthesized audio (0 when all came from checkpoints)
    realtime_factor: float | None  # audio seconds per wall second of this attempt
    stitch_tail_s: float = 0.0  # the last sentence synthesized -> every file in place


@dataclass(frozen=True)
class ChapterMark:
    title: str
    start_seconds: float


@dataclass(frozen=True)
class JobResult:
    output: str  # absolute path on the worker host
    output_relative: str  # path under the output root, as submitted
    output_sha256: str  # of the file as written: "already done" and "replaced" compare it
    duration_seconds: float
    samples: int  # at 24 kHz
    sentences: int
    paragraphs: int
    chapters: list[ChapterMark]
    synthesized: int  # sentences synthesized by this attempt (the rest came from checkpoints)
    reused: int  # sentences taken from checkpoints: the sentence cache, or an earlier attempt of the job
    frames: list[int]  # codec frames of each sentence
    runaway_sentences: list[int]  # used their whole frame budget (after retries)
    retried_sentences: list[int]  # were runaways once and were synthesized again with a new seed
    model: str  # what was loaded: hub id or local path
    quant: str
    voice_cache: str  # hit | miss | unused (nothing to synthesize)
    speaker_encoder_runs: int
    attempts: int  # attempts this job took (a warm stop does not count)
    timings: Timings
    segments: int = 0  # pieces the book was normalized and encoded in (jobs/audio/segments.py)
    segments_encoded_early: int = 0  # of them, done while sentences were still being synthesized
    voices: dict[str, dict] | None = None  # a cast: label -> {"sentences", "seconds"} (None: one voice)
    proof: dict | None = None  # --proof: the recognizer, sentences checked, flagged, retaken, still_flagged, ...
    word_timings: dict | None = None  # --word-timings: the aligner, sentences read along word by word and not

    def to_json(self) -> dict:
        return asdict(self)
