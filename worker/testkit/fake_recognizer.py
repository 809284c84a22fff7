"""A stand-in for the proof pass's recognizer, for fault tests only (NARRATE_ENGINE=fake, beside the fake engine).
It implements narrate.jobs.task.model_protocols.Recognizer and imports no mlx.

It "hears" the fake engine's tones: each tone is remembered with its text and seed (fake_engine.SPOKEN, and the
file NARRATE_FAKE_SPOKEN for a process that did not make it), and it transcribes a tone as its text, or with a
defect asked for by environment variables:

- NARRATE_FAKE_PROOF_FLAW: ``SUBSTRING=defect,defect,...`` (several joined by ``;``): the first hearing of a take
  of a sentence containing SUBSTRING gets the first defect, the second the second, ...; later ones are heard
  right. Defects: ``drop`` (its second word dropped), ``repeat`` (its first two words said twice), ``cut`` (its
  last two words missing), ``tail`` (a made-up tail), ``nothing`` (heard as nothing), ``ok``.
- NARRATE_FAKE_PROOF_LOG: a file that gets one JSON line per take heard: text, seed, pid, batch (the number of
  the batch it came in, counted in this process).
- NARRATE_FAKE_PROOF_ABORT_ON: a substring: hearing a take of a sentence containing it kills the process
  (os.abort()), once: only while the file NARRATE_FAKE_PROOF_ABORT_ONCE does not exist (it is made first).
- NARRATE_FAKE_PROOF_DELAY_MS: added to every batch transcribed.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Sequence

import numpy as np
from narrate.worker.testkit.fake_engine import SPOKEN, audio_key

DEFECTS = ("drop", "repeat", "cut", "tail", "nothing", "ok")


class FakeRecognizer:
    source = "fake-recognizer"

    def __init__(self) -> None:
        self.hearings: Counter[str] = Counter()  # takes heard of each text, in this process
        self.batches: list[int] = []  # the size of each batch transcribed

    def transcribe(self, takes: Sequence[np.ndarray], *, languages: Sequence[str], texts: Sequence[str]) -> list[str]:
        time.sleep(int(os.environ.get("NARRATE_FAKE_PROOF_DELAY_MS", "0")) / 1000)
        self.batches.append(len(takes))
        return [self._hear(np.asarray(t), len(self.batches)) for t in takes]

    def _hear(self, pcm: np.ndarray, batch: int) -> str:
        spoken = SPOKEN.get(audio_key(pcm)) or _from_file(audio_key(pcm))
        if spoken is None:
            return ""  # a sound it never made
        text, seed = spoken
        log = os.environ.get("NARRATE_FAKE_PROOF_LOG")
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"text": text, "seed": seed, "pid": os.getpid(), "batch": batch}) + "\n")
        _abort_once(text)
        n = self.hearings[text]
        self.hearings[text] += 1
        flaws = _flaws(text)
        return _defect(text, flaws[n] if n < len(flaws) else "ok")


def _from_file(key: str) -> tuple[str, int] | None:
    spoken = os.environ.get("NARRATE_FAKE_SPOKEN")
    if not spoken or not os.path.exists(spoken):
        return None
    with open(spoken) as f:
        for line in f:
            row = json.loads(line)
            SPOKEN[row["key"]] = (row["text"], int(row["seed"]))
    return SPOKEN.get(key)


def _abort_once(text: str) -> None:
    needle, marker = os.environ.get("NARRATE_FAKE_PROOF_ABORT_ON"), os.environ.get("NARRATE_FAKE_PROOF_ABORT_ONCE")
    if needle and marker and needle in text and not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write(f"{os.getpid()}\n")
        os.abort()


def _flaws(text: str) -> list[str]:
    for rule in filter(None, os.environ.get("NARRATE_FAKE_PROOF_FLAW", "").split(";")):
        needle, _, defects = rule.partition("=")
        if needle and needle in text:
            return [d.strip() for d in defects.split(",") if d.strip()]
    return []


def _defect(text: str, defect: str) -> str:
    words = text.split()
    if defect == "drop" and len(words) > 2:
        return " ".join(words[:1] + words[2:])
    if defect == "repeat":
        return " ".join(words[:2] + words)
    if defect == "cut" and len(words) > 2:
        return " ".join(words[:-2])
    if defect == "tail":
        return f"{text} thank you for watching"
    if defect == "nothing":
        return ""
    return text
