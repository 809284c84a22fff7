"""A sentence's takes under the proof pass: each take's seed and verdict, which take is kept, whether its proof is
final (a resumed job does not hear it again), the seeds of retakes, the voice's norm of pace, and the job's
counts. The record is kept in the sentence's checkpoint header (jobs.book.checkpoints ``record_proof``)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from narrate.jobs.proof.verdict import Verdict

# A retake's seed: the sentence's seed moved by an odd 32-bit constant per take (another than the runaway
# retries' step, worker/engine/mlx_engine.py), kept to 31 bits like every sentence seed.
RETAKE_SEED_STEP = 0x2545F491
SEED_MASK = 0x7FFFFFFF
NORM_MIN_TAKES = 5  # a voice's own pace is its norm once this many of its takes are judged ok


def retake_seed(seed: int, take: int) -> int:
    """The seed of take `take` (0: the sentence's own) of a sentence whose seed is `seed`."""
    return (seed + RETAKE_SEED_STEP * take) & SEED_MASK


@dataclass(frozen=True)
class Take:
    seed: int
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "verdict": self.verdict.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Take:
        return cls(int(data["seed"]), Verdict.from_json(data["verdict"]))


@dataclass
class Record:
    """One sentence's proof: the recognizer that heard it, its takes in order, the take kept (its audio is the
    checkpoint's) and whether it is final (ok, or out of retakes)."""

    model: str
    takes: list[Take] = field(default_factory=list)
    kept: int = 0
    final: bool = False

    def best(self) -> int:
        """The take to keep: the lowest ``Verdict.score``, the earliest of equals."""
        return min(range(len(self.takes)), key=lambda i: (self.takes[i].verdict.score(), i))

    @property
    def verdict(self) -> Verdict:
        return self.takes[self.kept].verdict

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "final": self.final, "kept": self.kept, "takes": [t.to_json() for t in self.takes]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        return cls(
            str(data["model"]),
            [Take.from_json(t) for t in data.get("takes") or []],
            int(data.get("kept", 0)),
            bool(data.get("final")),
        )


def final_record(proof: dict | None, model: str) -> Record | None:
    """The record kept in a checkpoint's header, if it is final and was made by `model` (another recognizer's
    verdicts are heard again); None otherwise, or if it cannot be read."""
    if not isinstance(proof, dict) or not proof.get("final") or proof.get("model") != model:
        return None
    try:
        record = Record.from_json(proof)
    except (KeyError, TypeError, ValueError):
        return None
    return record if record.takes and 0 <= record.kept < len(record.takes) else None


@dataclass
class Norms:
    """Each voice's pace (words or characters a second) over its takes judged ok, as heard so far."""

    rates: dict[str, list[float]] = field(default_factory=dict)

    def add(self, voice: str, verdict: Verdict) -> None:
        if verdict.ok and verdict.rate:
            self.rates.setdefault(voice, []).append(verdict.rate)

    def norm(self, voice: str) -> float | None:
        """The median once NORM_MIN_TAKES are in; None before (the verdict's default)."""
        got = self.rates.get(voice, [])
        return statistics.median(got) if len(got) >= NORM_MIN_TAKES else None


@dataclass(frozen=True)
class Counts:
    """The proof pass of a job, as its meta and result say it: sentences heard (``checked``), whose first take
    was flagged (``flagged``), synthesized again (``retaken``), whose kept take is still flagged
    (``still_flagged``), the retakes synthesized (``retakes``) and each reason's count over the kept takes."""

    checked: int = 0
    flagged: int = 0
    retaken: int = 0
    still_flagged: int = 0
    retakes: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Iterable[Record]) -> Counts:
        checked = flagged = retaken = still = retakes = 0
        reasons: dict[str, int] = {}
        for r in records:
            if not r.takes:
                continue
            checked += 1
            flagged += not r.takes[0].verdict.ok
            retaken += len(r.takes) > 1
            retakes += len(r.takes) - 1
            if r.final and not r.verdict.ok:
                still += 1
                for reason in r.verdict.reasons:
                    reasons[reason] = reasons.get(reason, 0) + 1
        return cls(checked, flagged, retaken, still, retakes, dict(sorted(reasons.items())))

    def to_json(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "flagged": self.flagged,
            "retaken": self.retaken,
            "still_flagged": self.still_flagged,
            "retakes": self.retakes,
            "reasons": self.reasons,
        }
