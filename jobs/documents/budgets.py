"""Per-sentence frame budgets: the most codec frames a sentence may take before it counts as a
runaway (a sentence that never emits end-of-speech).

The budget is a generous multiple of the sentence's estimated speaking time, which depends on
its script: a Chinese character is a whole syllable (~4.5 a second), a kana or Hangul syllable
is shorter (~6.5-7 a second), while alphabetic text runs at ~15 characters a second (spaces and
punctuation included). Digits and symbols are read out as words, and punctuation adds pauses.
For plain Latin text this gives about the old rule of 25 + 2.1 frames per character."""

from __future__ import annotations

import re
from math import ceil

FRAMES_PER_SECOND = 12.5  # Qwen3-TTS codec frames per second of audio
BUDGET_FACTOR = 2.5  # a sentence may take 2.5x its estimated speaking time...
BUDGET_BASE_SECONDS = 2.0  # ...plus 2 s (lead-in, a slow or hesitant voice on a short sentence)

# Seconds of speech per character, for characters of each class (the classes do not overlap).
OTHER_SECONDS = 1 / 15  # letters of alphabetic scripts (Latin, Cyrillic, Greek...), spaces
SECONDS_PER_CHAR: tuple[tuple[str, re.Pattern[str], float], ...] = (
    # CJK ideographs (Chinese hanzi, Japanese kanji, Korean hanja): one syllable each, ~4.5/s.
    ("han", re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]"), 1 / 4.5),
    # Hiragana, katakana (with the long-vowel mark), halfwidth katakana: ~7 morae a second.
    ("kana", re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]"), 1 / 7),
    # Hangul syllables and jamo: ~6.5 syllables a second.
    ("hangul", re.compile("[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]"), 1 / 6.5),
    # Arabic and Hebrew letters: vowels mostly unwritten, so fewer letters per second.
    (
        "abjad",
        re.compile(
            "[\u0590-\u05ff\u0600-\u065f\u066a-\u06ef\u06fa-\u06ff"  # Arabic digits are digits
            "\u0750-\u077f\u08a0-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]"
        ),
        1 / 10,
    ),
    # Digits are read as number words: "1,234,567" is 18 syllables, "2024" 5 (or 4 in Chinese).
    ("digit", re.compile(r"\d"), 0.5),
    # Capitals of acronyms are spelled out: "HTML", "NASA", "BBC".
    ("acronym", re.compile(r"(?<![A-Za-z])[A-Z]{2,5}(?![A-Za-z])"), 0.3),
    # Symbols read as words (%, &, $, +, =, °...) and emoji.
    ("symbol", re.compile("[%&@#$€£¥₩₽+=<>×÷°§‰/\\\\*~^|\u2600-\u27bf\U0001f000-\U0001faff]"), 0.4),
    # Pauses: the end of a sentence or clause, in Latin and CJK (full-width) punctuation.
    ("stop", re.compile("[.!?。！？…‼⁇⁈⁉]"), 0.4),
    ("comma", re.compile("[,;:、，；：()（）\u2013\u2014]"), 0.2),
)


def speaking_seconds(text: str) -> float:
    """A rough estimate of how long `text` takes to say at a normal pace."""
    seconds, counted = 0.0, 0
    for _name, pattern, per_char in SECONDS_PER_CHAR:
        n = sum(len(m) for m in pattern.findall(text))
        seconds += n * per_char
        counted += n
    return seconds + (len(text) - counted) * OTHER_SECONDS


def frame_budget(text: str, max_frames: int) -> int:
    """Most codec frames a sentence may take before it counts as a runaway, capped by max_frames."""
    budget = ceil((BUDGET_BASE_SECONDS + BUDGET_FACTOR * speaking_seconds(text)) * FRAMES_PER_SECOND)
    return max(1, min(max_frames, budget))
