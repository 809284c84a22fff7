"""Ordinals written with digits in the languages besides English that num2words speaks, read as
words before the plain numbers are: "le 1er mai" -> "le premier mai", "XIXe siècle" ->
"dix-neuvième siècle", "la 2ª vez" -> "la segunda vez", "am 3. Mai" -> "am dritten Mai",
"5-го мая" -> "пятого мая". The written suffix says the gender (and in Russian the case), so the
ending follows it; German ordinals are recognised only before a month or a word that takes one
(a bare "3." may end a sentence). German four-digit numbers from 1100 to 1999 are read as years
(as German also reads such amounts: "fünfzehnhundert Euro")."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import cast

_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman(numeral: str) -> int:
    total = 0
    for a, b in zip(numeral, numeral[1:] + " ", strict=True):
        v = _ROMAN[a]
        total += -v if b in _ROMAN and _ROMAN[b] > v else v
    return total


def _say(n: int, lang: str, **kw: object) -> str:
    from num2words import num2words

    return cast(str, num2words(n, lang=lang, to="ordinal", **kw))  # num2words is untyped


def _feminine(words: str) -> str:
    """Spanish/Italian/Portuguese: every word's masculine -o becomes -a ("vigésimo primero" ->
    "vigésima primera")."""
    return re.sub(r"o\b", "a", words)


def _french(text: str) -> str:
    def say(n: int, suffix: str) -> str:
        s = suffix.lower()
        if n == 1 and s in ("er",):
            return "premier"
        if n == 1 and s in ("re", "ère"):
            return "première"
        if n == 2 and s in ("nd", "nde"):
            return "second" if s == "nd" else "seconde"
        return _say(n, "fr")

    text = re.sub(r"\b(\d{1,6})(er|re|ère|e|ème|eme|nd|nde)\b", lambda m: say(int(m.group(1)), m.group(2)), text)
    # Roman numerals with an ordinal suffix: "XIXe siècle", "IIIe République", "Ve", "Ier" (one
    # letter only for I, V and X: "Ce", "De", "Le" and "Me" are words).
    return re.sub(
        r"\b([IVXLCDM]{2,7}|[IVX])(er|re|ère|e|ème)\b",
        lambda m: say(roman(m.group(1)), m.group(2)),
        text,
    )


def _iberian(lang: str) -> Callable[[str], str]:
    """Spanish, Italian, Portuguese: 1º / 1.º / 1° masculine, 1ª / 1.ª feminine; Spanish also
    1.er / 3.er (primer, tercer) and 1.ª / 1.a."""

    def convert(text: str) -> str:
        def say(m: re.Match[str]) -> str:
            n, mark = int(m.group(1)), m.group(2).lower()
            words = _say(n, lang)
            if mark in ("ª", "a"):
                return _feminine(words)
            if mark == "er" and lang == "es":
                return re.sub(r"o$", "", words)  # primero -> primer, tercero -> tercer
            return words

        marks = "º|°|ª|er|a" if lang == "es" else "º|°|ª"
        return re.sub(r"\b(\d{1,6})\.?(" + marks + r")(?!\w)", say, text)

    return convert


_DE_NEXT = (
    "Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember|"
    "Jahrhundert|Jahrhunderts|Kapitel|Kapitels|Stock|Platz|Mal|Auflage|Klasse|Geburtstag|Jahrestag|Runde|Teil|Band"
)
_DE_DATIVE = re.compile(r"(?:\b(?:am|vom|zum|im|beim|dem|den|des|zur|einem|einen|seinem|ihrem))\s+$", re.IGNORECASE)


def _german(text: str) -> str:
    def say(m: re.Match[str]) -> str:
        base = _say(int(m.group(1)), "de")  # "dritte"
        before = text[: m.start()]
        return base + "n" if _DE_DATIVE.search(before) else base

    text = re.sub(r"\b(\d{1,4})\.(?=\s+(?:" + _DE_NEXT + r")\b)", say, text)
    # Years as German reads them: 1999 is "neunzehnhundertneunundneunzig", not "eintausend...".
    return re.sub(r"(?<![\d.,])(1[1-9]\d\d)(?![\d.,]\d)", lambda m: _year_de(int(m.group(1))), text)


def _year_de(n: int) -> str:
    from num2words import num2words

    return cast(str, num2words(n, lang="de", to="year"))  # num2words is untyped


# Russian: the written ending -> (gender, case, plural).
_RU_ENDINGS = {
    "й": ("m", "n", False),
    "ый": ("m", "n", False),
    "ой": ("m", "n", False),
    "ий": ("m", "n", False),
    "я": ("f", "n", False),
    "ая": ("f", "n", False),
    "ья": ("f", "n", False),
    "е": ("n", "n", False),
    "ое": ("n", "n", False),
    "ье": ("n", "n", False),
    "го": ("m", "g", False),
    "ого": ("m", "g", False),
    "му": ("m", "d", False),
    "ому": ("m", "d", False),
    "м": ("m", "p", False),
    "ом": ("m", "p", False),
    "ю": ("f", "a", False),
    "ую": ("f", "a", False),
    "х": ("m", "g", True),
    "ых": ("m", "g", True),
}


def _russian(text: str) -> str:
    def say(m: re.Match[str]) -> str:
        gender, case, plural = _RU_ENDINGS[m.group(2)]
        return _say(int(m.group(1)), "ru", gender=gender, case=case, plural=plural)

    endings = "|".join(sorted(_RU_ENDINGS, key=len, reverse=True))
    return re.sub(r"\b(\d{1,6})-(" + endings + r")(?!\w)", say, text)


CONVERTERS: dict[str, Callable[[str], str]] = {
    "fr": _french,
    "es": _iberian("es"),
    "it": _iberian("it"),
    "pt": _iberian("pt"),
    "de": _german,
    "ru": _russian,
}


def ordinals(text: str, language: str) -> str:
    """`text` with its written ordinals in words (unchanged for a language without rules)."""
    convert = CONVERTERS.get(language)
    return convert(text) if convert else text
