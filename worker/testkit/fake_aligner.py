"""A stand-in for the word timings' forced aligner, for fast tests only (NARRATE_ENGINE=fake, beside the fake
engine). It implements narrate.jobs.task.model_protocols.Aligner and imports no mlx.

It splits the text into words as mlx-audio's aligner does for a language written with spaces (punctuation dropped,
letters, digits and apostrophes kept) and spreads them over the take by their length in characters, each word
ending a tenth of its share before the next one starts. Environment variables:

- NARRATE_FAKE_ALIGN_LOG: a file that gets one JSON line per take aligned: text, model, pid, batch (the number of
  the call it came in, counted in this process).
- NARRATE_FAKE_ALIGN_FLAW: ``SUBSTRING=defect`` (several joined by ``;``): a take of a sentence containing SUBSTRING
  gets ``nothing`` (no words), ``late`` (times past the end of the take) or ``instant`` (every word at one time).
- NARRATE_FAKE_ALIGN_ABORT_ON: a substring: aligning a take of a sentence containing it kills the process
  (os.abort()), once: only while the file NARRATE_FAKE_ALIGN_ABORT_ONCE does not exist (it is made first).
"""

from __future__ import annotations

import json
import os
import unicodedata
from collections.abc import Sequence

import numpy as np

RATE = 24_000


def words_of(text: str) -> list[str]:
    """The words of `text` as mlx-audio's ForceAlignProcessor keeps them for a space-separated language."""
    out = []
    for part in text.split():
        kept = "".join(ch for ch in part if ch == "'" or unicodedata.category(ch)[0] in "LN")
        if kept:
            out.append(kept)
    return out


class FakeAligner:
    def __init__(self, source: str = "fake-aligner") -> None:
        self.source = source
        self.calls = 0

    def align(
        self, takes: Sequence[np.ndarray], *, texts: Sequence[str], languages: Sequence[str]
    ) -> list[list[tuple[str, float, float]]]:
        self.calls += 1
        return [self._one(np.asarray(t), text) for t, text in zip(takes, texts, strict=True)]

    def _one(self, pcm: np.ndarray, text: str) -> list[tuple[str, float, float]]:
        log = os.environ.get("NARRATE_FAKE_ALIGN_LOG")
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"text": text, "model": self.source, "pid": os.getpid(), "batch": self.calls}))
                f.write("\n")
        _abort_once(text)
        words, seconds = words_of(text), pcm.size / RATE
        flaw = _flaw(text)
        if flaw == "nothing" or not words:
            return []
        if flaw == "instant":
            return [(w, seconds / 2, seconds / 2) for w in words]
        total = sum(len(w) for w in words)
        out, at = [], 0.0
        for w in words:
            share = seconds * len(w) / total
            out.append((w, round(at, 3), round(at + 0.9 * share, 3)))
            at += share
        if flaw == "late":
            out = [(w, a + seconds + 1.0, b + seconds + 1.0) for w, a, b in out]
        return out


def _abort_once(text: str) -> None:
    needle, marker = os.environ.get("NARRATE_FAKE_ALIGN_ABORT_ON"), os.environ.get("NARRATE_FAKE_ALIGN_ABORT_ONCE")
    if needle and marker and needle in text and not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write(f"{os.getpid()}\n")
        os.abort()


def _flaw(text: str) -> str | None:
    for rule in filter(None, os.environ.get("NARRATE_FAKE_ALIGN_FLAW", "").split(";")):
        needle, _, defect = rule.partition("=")
        if needle and needle in text:
            return defect.strip()
    return None
