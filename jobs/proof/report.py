"""The proof pass sentence by sentence, as a job's result keeps it (``sentences``): each sentence whose first take
was flagged (retaken or not), where it is in the book, what was written and spoken, what the kept take was heard
as, what is wrong, every take tried (its seed and a summary of its verdict) and whether the kept take is still
flagged or fixed. The result carries it whole, so `narrate proof`, the HTTP API and the Job page read it on any
host, without the worker's checkpoints (docs/proof.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from narrate.jobs.proof.takes import Record, Take

MAX_SENTENCES = 1000  # listed in a result at most: the still flagged first, then the fixed; the rest are counted
FIXED, STILL_FLAGGED = "fixed", "still_flagged"


@dataclass(frozen=True)
class Place:
    """Where a sentence is in the stitched book: its first and last sample in seconds, its chapter (its number in
    the book's chapter list, 1 first, and its title; None before the first)."""

    start_s: float
    end_s: float
    chapter: int | None = None
    chapter_title: str | None = None


def listed(records: Mapping[int, Record]) -> list[int]:
    """The sentences the report lists, in reading order: those whose first take was flagged."""
    return sorted(i for i, r in records.items() if r.takes and not r.takes[0].verdict.ok)


def sentences(
    records: Mapping[int, Record],
    written: Sequence[str],
    spoken: Sequence[str],
    places: Mapping[int, Place],
    limit: int = MAX_SENTENCES,
) -> tuple[list[dict[str, Any]], int]:
    """The listed sentences (at most `limit`: those still flagged first, then the fixed ones, each in reading
    order) as JSON, and how many were left out. `written` and `spoken`: every sentence's text as the document
    writes it and as narrate speaks it (the plan's)."""
    found = listed(records)
    still = [i for i in found if not records[i].verdict.ok]
    kept = sorted((still + [i for i in found if records[i].verdict.ok])[:limit])
    return [entry(i, records[i], written[i], spoken[i], places.get(i)) for i in kept], len(found) - len(kept)


def entry(index: int, record: Record, written: str, spoken: str, place: Place | None) -> dict[str, Any]:
    """One sentence of the report (see docs/proof.md, What a job says)."""
    verdict = record.verdict
    fixed = verdict.ok
    return {
        "index": index,
        "chapter": place.chapter if place else None,
        "chapter_title": place.chapter_title if place else None,
        "start_s": round(place.start_s, 3) if place else None,
        "end_s": round(place.end_s, 3) if place else None,
        "text": written,
        "spoken": spoken,
        "transcript": verdict.transcript,
        "outcome": FIXED if fixed else STILL_FLAGGED,
        "reasons": list(verdict.reasons),
        "flagged_for": list(record.takes[0].verdict.reasons),
        "problem": problem(record),
        "kept": record.kept,
        "takes": [take(t, n == record.kept) for n, t in enumerate(record.takes)],
    }


def take(t: Take, kept: bool) -> dict[str, Any]:
    """A take as the report lists it: its seed and its verdict in short."""
    v = t.verdict
    return {
        "seed": t.seed,
        "ok": v.ok,
        "reasons": list(v.reasons),
        "said": v.said(),
        "wer": v.wer,
        "transcript": v.transcript,
        "kept": kept,
    }


def problem(record: Record) -> str:
    """What is wrong, in one line: the kept take's faults; for a sentence fixed by a retake, which take fixed it
    and what was wrong with the first."""
    if not record.verdict.ok:
        return record.verdict.said()
    return f"fixed by take {record.kept + 1} of {len(record.takes)}; take 1: {record.takes[0].verdict.said()}"
