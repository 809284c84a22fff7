"""Word timings (`--word-timings`, docs/readalong.md): what a job asks of a forced aligner, without importing one.

The ``Aligner`` protocol (narrate.jobs.task.model_protocols) is what the MLX aligner (narrate.worker.engine.aligner:
mlx-audio's Qwen3-ForcedAligner) and the tests' stand-in (narrate.worker.testkit.fake_aligner) implement: given a
sentence's take and the text that was spoken, each word's start and end in the take. ``check_words`` decides whether
what it gave can be used (an aligner may give nothing, or, on audio it cannot follow, times outside the take or all
at one instant): a sentence whose words cannot be used is read along sentence by sentence. The record kept in the
sentence's checkpoint header (``record``, ``from_record``) carries the aligner's name, so a resumed job, or another
job reading the same sentence, does not align it again."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from narrate.jobs.proof.recognizer_choice import check_model_ref
from narrate.jobs.readalong.timing import Word

if TYPE_CHECKING:
    pass

AUTO = ("auto", "default")  # `--word-timings` alone: the worker's NARRATE_ALIGN_MODEL
SLACK_S = 0.25  # an aligner's time may run this far past the end of the take (its classes are 80 ms wide)
# The language names Qwen3-ForcedAligner splits words by (ForceAlignProcessor.encode_timestamp): its own tokenizers
# for Chinese, Japanese and Korean, spaces for the rest.
_OWN_SPLIT = {"chinese": "Chinese", "japanese": "Japanese", "korean": "Korean"}


def align_model(asked: str, configured: str) -> str:
    """The aligner a job uses: the one it asked for (`--word-timings MODEL`), else (`auto`) the worker's
    NARRATE_ALIGN_MODEL."""
    return configured if asked in AUTO else asked


def check_aligner(value: str | None, option: str = "--word-timings") -> str | None:
    """`--word-timings` as a job carries it: None (off), "auto", a hub id unchanged, or a local aligner directory
    as an absolute path (BadInput otherwise)."""
    if value is None:
        return None
    if value.strip().lower() in AUTO:
        return "auto"
    return check_model_ref(value, "aligner", option)


def language_name(language: str) -> str:
    """What the aligner is told a sentence's language is: how it splits the text into words."""
    return _OWN_SPLIT.get(language.lower(), "English")


def check_words(words: Sequence[Word], seconds: float) -> str | None:
    """Why an aligner's words for a take of `seconds` cannot be used (None: they can): none, a time that is not a
    number, negative or past the take's end, starts out of order, or every word at one instant."""
    if not words:
        return "no words"
    for text, start, end in words:
        if not (isinstance(text, str) and math.isfinite(start) and math.isfinite(end)):
            return "a time that is not a number"
        if start < 0 or end < start:
            return f"a word that ends before it starts ({text!r})"
        if end > seconds + SLACK_S:
            return f"a time past the end of the take ({end:.2f} s of {seconds:.2f} s)"
    starts = [w[1] for w in words]
    if any(b < a for a, b in zip(starts, starts[1:], strict=False)):
        return "words out of order"
    if len(words) > 1 and len({(round(s, 3), round(e, 3)) for _, s, e in words}) == 1:
        return "every word at one instant"
    return None


def record(model: str, sha256: str, words: Sequence[Word], why: str | None) -> dict[str, Any]:
    """What a checkpoint's header keeps: the aligner, the take it aligned (its body's sha256), and its words, or
    why there are none."""
    if why is not None:
        return {"model": model, "take": sha256, "words": [], "why": why}
    return {"model": model, "take": sha256, "words": [[w, round(s, 3), round(e, 3)] for w, s, e in words]}


def from_record(data: object, model: str, sha256: str) -> list[Word] | None:
    """The words a header's record keeps for this aligner and this take ([] where it could give none); None when
    it has none of theirs (another aligner's, another take's, or none)."""
    if not isinstance(data, dict) or data.get("model") != model or data.get("take") != sha256:
        return None
    words = data.get("words")
    if not isinstance(words, list):
        return None
    out: list[Word] = []
    for w in words:
        if not (isinstance(w, list) and len(w) == 3 and isinstance(w[0], str)):
            return None
        out.append((w[0], float(w[1]), float(w[2])))
    return out
