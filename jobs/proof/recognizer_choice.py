"""The speech recognizer a job's proof pass uses, and what a model reference may name, without importing one (the
``Recognizer`` protocol is in narrate.jobs.task.model_protocols)."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from narrate.jobs.errors import BadInput

if TYPE_CHECKING:
    pass

HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")
AUTO = ("auto", "default")  # `--proof` given without a model: the worker's NARRATE_PROOF_MODEL, else by language
# The recognizer of a job asked `--proof` with no model and no NARRATE_PROOF_MODEL, by the sentences' languages (what
# Qwen3-TTS calls them). English: Parakeet TDT v2, a non-autoregressive transducer (one encoder pass, then a greedy
# token-and-duration decode) trained on English; the European languages Qwen3-TTS speaks: Parakeet TDT v3 (25
# European languages); Chinese, Japanese, Korean and undetected languages: Whisper large-v3 turbo (mlx-audio's own
# default recognizer). A book in more than one of these groups gets Whisper.
ENGLISH = "mlx-community/parakeet-tdt-0.6b-v2"
EUROPEAN = "mlx-community/parakeet-tdt-0.6b-v3"
ANY = "mlx-community/whisper-large-v3-turbo"
_EUROPEAN = {"german", "french", "spanish", "italian", "portuguese", "russian"}


def proof_model(asked: str, languages: set[str], configured: str | None = None) -> str:
    """The recognizer a job uses: the one it asked for (`--proof MODEL`), else (`auto`) the worker's
    NARRATE_PROOF_MODEL (`configured`), else by the languages of its sentences."""
    if asked not in AUTO:
        return asked
    if configured:
        return configured
    if languages and languages <= {"english"}:
        return ENGLISH
    if languages and languages <= _EUROPEAN | {"english"}:
        return EUROPEAN
    return ANY


def check_proof(value: str | None, option: str = "--proof") -> str | None:
    """`--proof` as a job carries it: None (off), "auto", a hub id (org/name) unchanged, or a local recognizer
    directory as an absolute path. Raises BadInput for anything else (a missing path, a directory without
    config.json, a word that names nothing)."""
    if value is None:
        return None
    value = value.strip()
    if value.lower() in AUTO:
        return "auto"
    return check_model_ref(value, "recognizer", option)


def check_model_ref(value: str, what: str, option: str) -> str:
    """A model an option names (`what`: "recognizer", "aligner"): a hub id (org/name) unchanged, or a local model
    directory as an absolute path. Raises BadInput for anything else (a missing path, a directory without
    config.json, a word that names nothing)."""
    value = value.strip()
    path = Path(value).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise BadInput(f"{what} {value} has no config.json: it is not a model directory")
        return os.path.abspath(path)
    if HUB_ID.fullmatch(value) and not value.startswith((".", "~", "/")):
        return value
    raise BadInput(
        f"{what} {value!r} is neither a local model directory nor a Hugging Face id (org/name); give "
        f"auto, an id or a directory (after the document: {option} takes the word after it)"
    )


LIMIT_EXTRA = 12  # tokens a transcript may have beyond what its take can hold: a language tag, a made-up tail
TOKENS_A_SECOND = 10  # more than any speech holds: about 4 a second in English narration, 4-6 in Chinese and
# Japanese, up to 8 where digits are read out (a digit is a token)


def limit_of(tokens: int, seconds: float | None = None) -> int:
    """Tokens a recognizer may spend on a take `seconds` long of a text of `tokens` tokens (in its own tokenizer):
    half as many again as the text has, plus LIMIT_EXTRA, and never more than TOKENS_A_SECOND for every second of
    the take, plus LIMIT_EXTRA (a take cut short cannot hold its whole text; a recognizer that makes up words on a
    silence or a babble stops there). A transcript cut at either is flagged whatever it would have said next: it
    has half the sentence's words too many (a word error rate of 0.5 or more), or more words than the take's
    length can hold."""
    limit = (3 * tokens + 1) // 2 + LIMIT_EXTRA
    if seconds is not None:
        limit = min(limit, math.ceil(TOKENS_A_SECOND * seconds) + LIMIT_EXTRA)
    return limit


def token_limit(text: str, seconds: float | None = None) -> int:
    """``limit_of`` for a recognizer whose tokenizer narrate does not count with: the text's tokens estimated from
    its bytes, four ninths of a token a byte (English runs near a quarter, a Chinese character is three bytes and
    one or two tokens), so that the limit is two thirds of a token a byte, plus LIMIT_EXTRA."""
    return limit_of(4 * len(text.encode()) // 9, seconds)
