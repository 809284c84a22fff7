"""A take's verdict: what a speech recognizer heard, aligned word by word with the sentence as narrate speaks it
(after its own normalization: numbers, abbreviations and the lexicon, jobs.documents.normalize, applied to both
texts alike), and what the audio itself shows.

Flagged, each with its reason code:

- ``wer``: the word error rate is above ``proof_max_wer``;
- ``dropped``: a word of the sentence is not heard at all (a deletion, not a misheard word; two words heard as
  one, "every one" as "everyone", are not dropped);
- ``repeated``: words heard twice in a row where the sentence has them once (a stutter, a phrase said again);
- ``ending``: the sentence's last ``proof_ending_words`` words are all missing (a take cut short);
- ``tail``: ``proof_tail_words`` or more words heard after the sentence's last word (a made-up tail);
- ``rate``: words a second (characters for Chinese and Japanese) more than ``proof_rate_factor`` times slower
  or faster than the voice's norm, over the take's sound from its first to its last (a runaway, a rushed take);
- ``silence``: a silence between its first and last sound longer than ``proof_max_silence_s``.

The alignment is rapidfuzz's Levenshtein opcodes over word lists. Nothing here loads a model."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from narrate.jobs.documents.languages import AUTO, DEFAULT, check_language
from narrate.jobs.documents.normalize import Normalizer
from narrate.jobs.errors import BadInput
from narrate.jobs.settings import SAMPLE_RATE, Settings, default

if TYPE_CHECKING:
    import numpy as np

REASONS = ("wer", "dropped", "repeated", "ending", "tail", "rate", "silence")
CHARACTER_LANGUAGES = {"zh", "ja"}  # written without spaces: counted and aligned by character
# Words (characters) a second of a voice before its own norm is known (the job's first takes): English audiobook
# narration runs about 150-160 words a minute; Chinese and Japanese narration 4-6 characters a second.
DEFAULT_RATE = {"words": 2.6, "chars": 5.0}
RATE_MIN_UNITS = 4  # shorter sentences: their pace says nothing (a pause weighs too much)
WINDOW_S = 0.02  # the silence analysis' window
SILENCE_BELOW_PEAK = 0.03  # a window quieter than this share of the take's loudest window (-30 dB) is silent
SILENCE_FLOOR = 0.003  # and always below this RMS (-50 dBFS)
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])[^\W_])+")
_APOSTROPHES = re.compile(r"['\u2019\u02bc`]")


@dataclass(frozen=True)
class Thresholds:
    """What flags a take (the worker's NARRATE_PROOF_* settings)."""

    max_wer: float = default("proof_max_wer")
    ending_words: int = default("proof_ending_words")
    tail_words: int = default("proof_tail_words")
    rate_factor: float = default("proof_rate_factor")
    max_silence_s: float = default("proof_max_silence_s")

    @classmethod
    def from_settings(cls, s: Settings) -> Thresholds:
        return cls(
            s.proof_max_wer, s.proof_ending_words, s.proof_tail_words, s.proof_rate_factor, s.proof_max_silence_s
        )


@dataclass(frozen=True)
class Verdict:
    """One take judged: ``ok`` unless ``reasons`` has a code (REASONS); JSON-able (``to_json``/``from_json``)."""

    ok: bool
    reasons: tuple[str, ...]
    transcript: str  # what the recognizer heard
    wer: float  # word error rate against the sentence as spoken (characters for zh, ja)
    words: int  # words (characters) of the sentence
    dropped: tuple[str, ...] = ()  # its words not heard at all
    inserted: tuple[str, ...] = ()  # words heard that it does not have (repeated and tail words too)
    repeated: tuple[str, ...] = ()  # phrases heard twice in a row
    tail: tuple[str, ...] = ()  # words heard after its last word
    ending: bool = False  # its last words are all missing
    seconds: float = 0.0  # the take's length
    rate: float | None = None  # words (characters) a second over its sound; None: too short to say
    norm: float | None = None  # the voice's norm it was compared with
    silence_s: float = 0.0  # the longest silence between its first and last sound

    def score(self) -> tuple[float, ...]:
        """Lower is better: the take kept among a sentence's takes has the fewest reasons, then the lowest
        error rate, then the pace nearest its norm."""
        pace = abs(self.rate / self.norm - 1) if self.rate and self.norm else 0.0
        return (float(len(self.reasons)), round(self.wer, 6), len(self.dropped) + len(self.inserted), pace)

    def to_json(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for name in ("reasons", "dropped", "inserted", "repeated", "tail"):
            known[name] = tuple(known.get(name) or ())
        return cls(**known)

    def said(self) -> str:
        """One line for the log: what is wrong with the take."""
        if self.ok:
            return f"ok (wer {self.wer:.2f})"
        parts = []
        for r in self.reasons:
            detail = {
                "wer": f"wer {self.wer:.2f}",
                "dropped": f"dropped {' '.join(self.dropped)!r}",
                "repeated": f"repeated {'; '.join(self.repeated)!r}",
                "tail": f"tail {' '.join(self.tail)!r}",
                "ending": "lost its ending",
                "silence": f"silence {self.silence_s:.1f} s",
                "rate": f"{self.rate:.1f}/s against {self.norm:.1f}/s" if self.rate and self.norm else "rate",
            }
            parts.append(detail[r])
        return ", ".join(parts)


@dataclass
class _Normalizers:
    by_code: dict[str, Normalizer] = field(default_factory=dict)

    def __call__(self, code: str) -> Normalizer:
        return self.by_code.setdefault(code, Normalizer(code))


_NORMALIZERS = _Normalizers()


def language_code(language: str) -> str:
    """The ISO code of a sentence's language as the TTS model is told it ("english", "auto")."""
    if not language or language == AUTO:
        return DEFAULT
    try:
        code = check_language(language)
    except BadInput:
        return DEFAULT
    return DEFAULT if code == AUTO else code


def units(text: str, language: str = "english") -> list[str]:
    """`text` as the words compared: spoken as narrate speaks it (numbers in words, ...), case folded, without
    punctuation or apostrophes, hyphenated words apart; Chinese and Japanese characters one by one."""
    code = language_code(language)
    spoken = _NORMALIZERS(code)(text)
    folded = unicodedata.normalize("NFKC", spoken).casefold()
    folded = _APOSTROPHES.sub("", folded)
    return _TOKEN.findall(folded)


def judge(
    spoken: str,
    transcript: str,
    pcm: np.ndarray | None = None,
    *,
    language: str = "english",
    norm: float | None = None,
    thresholds: Thresholds | None = None,
    sample_rate: int = SAMPLE_RATE,
) -> Verdict:
    """The verdict on one take of the sentence `spoken` (the plan's text), from the recognizer's `transcript`
    and the take's samples (`pcm`, float at `sample_rate`; None: no pace or silence checks). `norm`: the voice's
    words (characters) a second so far; None: DEFAULT_RATE."""
    t = thresholds or Thresholds()
    ref, hyp = units(spoken, language), units(transcript, language)
    a = align(ref, hyp)
    wer = a.errors / max(len(ref), 1) if ref else float(bool(hyp))
    ending = len(ref) >= 1 and all(i in a.lost for i in range(max(0, len(ref) - t.ending_words), len(ref)))
    tail = tuple(hyp[a.tail_from :]) if a.tail_from is not None else ()
    seconds = silence_s = 0.0
    rate = None
    if norm is None:
        norm = DEFAULT_RATE["chars" if language_code(language) in CHARACTER_LANGUAGES else "words"]
    if pcm is not None:
        seconds = float(len(pcm)) / sample_rate
        sound_s, silence_s = sound_and_silence(pcm, sample_rate)
        if len(ref) >= RATE_MIN_UNITS and sound_s > 0:
            rate = len(ref) / sound_s
    reasons = []
    if wer > t.max_wer:
        reasons.append("wer")
    if a.dropped:
        reasons.append("dropped")
    if a.repeated:
        reasons.append("repeated")
    if ending:
        reasons.append("ending")
    if len(tail) >= t.tail_words:
        reasons.append("tail")
    if rate is not None and not norm / t.rate_factor <= rate <= norm * t.rate_factor:
        reasons.append("rate")
    if silence_s > t.max_silence_s:
        reasons.append("silence")
    return Verdict(
        ok=not reasons,
        reasons=tuple(reasons),
        transcript=transcript,
        wer=round(wer, 4),
        words=len(ref),
        dropped=tuple(a.dropped),
        inserted=tuple(a.inserted),
        repeated=tuple(a.repeated),
        tail=tail,
        ending=ending,
        seconds=round(seconds, 3),
        rate=round(rate, 3) if rate is not None else None,
        norm=round(norm, 3),
        silence_s=round(silence_s, 3),
    )


@dataclass
class Alignment:
    errors: int = 0  # substitutions + deletions + insertions
    lost: set[int] = field(default_factory=set)  # sentence words not matched (deleted or substituted)
    dropped: list[str] = field(default_factory=list)  # deleted words (not two words heard as one)
    inserted: list[str] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)
    tail_from: int | None = None  # the transcript's first word heard after the sentence's last (None: none)


def align(ref: list[str], hyp: list[str]) -> Alignment:
    """The word alignment of the sentence `ref` and the transcript `hyp` (rapidfuzz's Levenshtein opcodes)."""
    from rapidfuzz.distance import Levenshtein

    out = Alignment()
    ops = Levenshtein.opcodes(ref, hyp)
    for op in ops:
        r0, r1, h0, h1 = op.src_start, op.src_end, op.dest_start, op.dest_end
        if op.tag == "replace":
            out.errors += max(r1 - r0, h1 - h0)
            out.lost.update(range(r0, r1))
            if r1 - r0 > h1 - h0 and "".join(ref[r0:r1]) != "".join(hyp[h0:h1]):
                out.dropped.extend(ref[r0 + (h1 - h0) : r1])
            elif h1 - h0 > r1 - r0:
                out.inserted.extend(hyp[h0 + (r1 - r0) : h1])
        elif op.tag == "delete":
            out.errors += r1 - r0
            out.lost.update(range(r0, r1))
            if not _joined(ref, r0, r1, hyp, h0):
                out.dropped.extend(ref[r0:r1])
        elif op.tag == "insert":
            out.errors += h1 - h0
            out.inserted.extend(hyp[h0:h1])
            run, n = hyp[h0:h1], h1 - h0
            if hyp[max(0, h0 - n) : h0] == run or hyp[h1 : h1 + n] == run:
                out.repeated.append(" ".join(run))
    if ref and ops and ops[-1].tag == "insert" and ops[-1].src_start == len(ref):
        out.tail_from = ops[-1].dest_start  # words heard after the sentence's last
    return out


def _joined(ref: list[str], r0: int, r1: int, hyp: list[str], h0: int) -> bool:
    """The deleted words ref[r0:r1] were heard joined to a neighbour ("every one" heard as "everyone")."""
    gone = "".join(ref[r0:r1])
    before = hyp[h0 - 1] if h0 > 0 else None
    after = hyp[h0] if h0 < len(hyp) else None
    left = ref[r0 - 1] if r0 > 0 else ""
    right = ref[r1] if r1 < len(ref) else ""
    return (before is not None and before == left + gone) or (after is not None and after == gone + right)


def sound_and_silence(pcm: np.ndarray, sample_rate: int = SAMPLE_RATE) -> tuple[float, float]:
    """(seconds from the take's first sound to its last, its longest silence in between), from the RMS of 20 ms
    windows: a window is silent below SILENCE_BELOW_PEAK of the loudest one's, and always below SILENCE_FLOOR."""
    import numpy as np

    x = np.asarray(pcm, dtype=np.float32).reshape(-1)
    n = int(sample_rate * WINDOW_S)
    if x.size < n:
        return 0.0, 0.0
    windows = x[: x.size // n * n].reshape(-1, n)
    rms = np.sqrt(np.mean(windows.astype(np.float64) ** 2, axis=1))
    loud = rms >= max(float(rms.max()) * SILENCE_BELOW_PEAK, SILENCE_FLOOR)
    if not loud.any():
        return 0.0, 0.0
    where = np.flatnonzero(loud)
    first, last = int(where[0]), int(where[-1])
    inner = ~loud[first : last + 1]
    longest = run = 0
    for quiet in inner:
        run = run + 1 if quiet else 0
        longest = max(longest, run)
    return (last - first + 1) * WINDOW_S, longest * WINDOW_S
