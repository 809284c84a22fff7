"""Text normalization: what a sentence says, written out the way it is read, before synthesis.

The lexicon (jobs.documents.lexicon) goes first, then the built-in rules. English has the full set
(jobs.documents.normalize.en: URLs and e-mail addresses, currency, percentages, dates, times, phone-like
digit strings, ordinals, years, Roman numerals after Chapter/Part/..., abbreviations, symbols,
numbers). Other languages num2words speaks get their numbers written out, and French, Spanish,
Italian, Portuguese, German and Russian their written ordinals
(jobs.documents.normalize.ordinals); text in a language it does not speak (Chinese) is left as it is.
The plan (jobs.book.plan) keeps the original text for
subtitles and manifests and synthesizes the normalized one, so checkpoints are keyed by what is
spoken: a changed rule or lexicon entry re-renders exactly the sentences whose spoken text changed.
"""

from __future__ import annotations

import re
from typing import cast

from narrate.jobs.documents.lexicon import Lexicon
from narrate.jobs.documents.normalize.ordinals import ordinals

# num2words' code for each supported document language that it speaks; the decimal mark there.
_NUM2WORDS = {c: c for c in ("en", "de", "fr", "es", "it", "pt", "ru", "ja", "ko")}
_DECIMAL_COMMA = {"de", "fr", "es", "it", "pt", "ru"}


class Normalizer:
    """Normalizes sentences of one document: its language and lexicon, compiled once."""

    def __init__(self, language: str = "en", lexicon: Lexicon | None = None):
        self.language = language
        self.table = {w: s for w, s in (lexicon or [])}
        words = sorted(self.table, key=len, reverse=True)
        self._lexicon = (
            re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words) + r")(?!\w)") if words else None
        )

    def __call__(self, text: str, heading: bool = False) -> str:
        """The spoken form of `text`; `heading`: it is a chapter title (a bare Roman numeral there
        is a number, e.g. "IV. The Storm")."""
        if self._lexicon is not None:
            text = self._lexicon.sub(lambda m: self.table[m.group()], text)
        if self.language == "en":
            from narrate.jobs.documents.normalize.en import normalize_english

            text = normalize_english(text, heading)
        elif self.language in _NUM2WORDS:
            text = _numbers(ordinals(text, self.language), self.language)
        return re.sub(r"[ \t]{2,}", " ", text).strip()


def normalize(text: str, language: str = "en", lexicon: Lexicon | None = None, heading: bool = False) -> str:
    return Normalizer(language, lexicon)(text, heading)


_POINT = {"it": "virgola", "ja": "点"}  # where num2words has no word for the decimal mark (or two)
_JOINED = {"ja"}  # digits written together: 一点二五


def _decimal(raw: str, mark: str, lang: str) -> str:
    """A decimal as it is written: the whole part as a number, then each digit after the mark, so
    trailing zeros and long decimals are kept (num2words takes a float: "1,10" read as "1,1"; its
    Italian drops the decimals). Russian reads the fraction as a number of tenths, hundredths...:
    num2words does that right when given the exact value."""
    from decimal import Decimal

    from num2words import CONVERTER_CLASSES, num2words

    negative = raw.startswith("-")
    whole, frac = raw.lstrip("-").split(mark, 1)
    converter = CONVERTER_CLASSES[lang]
    neg = (converter.negword or "minus ").strip() if negative else ""
    if lang == "ru":
        spoken = cast(str, num2words(Decimal(f"{whole}.{frac}"), lang=lang))
    else:
        point = _POINT.get(lang) or converter.pointword
        sep = "" if lang in _JOINED else " "
        after = sep.join(cast(str, num2words(int(d), lang=lang)) for d in frac)
        spoken = sep.join([cast(str, num2words(int(whole), lang=lang)), point, after])
    return f"{neg} {spoken}" if neg and lang not in _JOINED else neg + spoken


def _numbers(text: str, language: str) -> str:
    """Plain numbers in a language other than English, through num2words."""
    from num2words import num2words

    lang = _NUM2WORDS[language]
    mark = "," if language in _DECIMAL_COMMA else "."
    number = re.compile(r"(?<![\w.,])-?\d+(?:" + re.escape(mark) + r"\d+)?(?![\w])")

    def say(m: re.Match[str]) -> str:
        raw = m.group()
        try:
            return _decimal(raw, mark, lang) if mark in raw else cast(str, num2words(int(raw), lang=lang))
        except (NotImplementedError, OverflowError, ValueError, KeyError):
            return raw

    return number.sub(say, text)
