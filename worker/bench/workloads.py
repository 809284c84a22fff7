"""What ``narrate bench`` synthesizes: sentences with their frame budgets.

- ``fixed``: the same short sentences, every one exactly ``frames`` codec frames (all rows of a
  batch end together: the best case for static batches);
- ``book``: the sentences of a real chapter of prose (benchdata/chapter.txt, chapter 1 of Pride
  and Prejudice, public domain), split as jobs split documents, each with the frame budget a job
  gives it (jobs.documents.budgets.frame_budget), optionally scaled down (``budget_scale``) so a CPU run
  stays short while the spread of lengths stays. EOS is disabled on random weights, so every row
  runs to its own budget, as a runaway does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from narrate.jobs.documents.budgets import frame_budget
from narrate.jobs.documents.documents import sentences_of, split_paragraphs
from narrate.jobs.errors import NarrateError

CHAPTER = Path(__file__).parent / "benchdata" / "chapter.txt"
BOOK_MAX_FRAMES = 2048  # mlx-audio's default cap; jobs use NARRATE_MAX_FRAMES
FIXED_SENTENCES = [
    "The storm came in from the west just after dark.",
    "By nine o'clock the rain was falling sideways, and the old lighthouse shook with every gust.",
    "Mara climbed the spiral stairs with a lantern in one hand.",
    "She had kept the light for eleven years.",
    "In all that time it had never once gone out, and tonight would not be the first.",
    "At the top, the great lens turned slowly, throwing its beam across the black water.",
    "Somewhere out there a ship was fighting its way toward the harbor.",
    "She checked the oil, trimmed the wick, and settled in to wait for morning.",
]
WORKLOADS = ("book", "fixed")


@dataclass(frozen=True)
class Item:
    text: str
    budget: int  # codec frames (12.5 a second)


def chapter_sentences() -> list[str]:
    """The chapter's sentences in reading order (its first line, the source note, left out)."""
    text = CHAPTER.read_text(encoding="utf-8").split("\n", 1)[1]
    return [s for block in split_paragraphs(text) for para in block for s in sentences_of(para, "en")]


def workload(name: str, sentences: int, frames: int, budget_scale: float = 1.0) -> list[Item]:
    """`sentences` items of workload `name` (book: at most the chapter's; 0: all of them)."""
    if name == "fixed":
        texts = (FIXED_SENTENCES * (sentences // len(FIXED_SENTENCES) + 1))[:sentences]
        return [Item(t, frames) for t in texts]
    if name != "book":
        raise NarrateError(f"unknown workload {name!r}: use one of {', '.join(WORKLOADS)}")
    if not 0 < budget_scale <= 1:
        raise NarrateError(f"--budget-scale must be in (0, 1], got {budget_scale}")
    texts = chapter_sentences()
    texts = texts[:sentences] if sentences else texts
    return [Item(t, max(1, math.ceil(frame_budget(t, BOOK_MAX_FRAMES) * budget_scale))) for t in texts]
