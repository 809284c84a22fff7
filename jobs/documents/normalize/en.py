"""English normalization rules (see jobs.documents.normalize), applied in this order, each writing out what
it matched so later rules no longer see its digits: e-mail addresses, URLs, currency,
percentages, dates, year ranges, decades, times, phone-like digit strings (digit by digit),
ordinals, Roman numerals, abbreviations, symbols, years (four-digit numbers 1100-2099 are read as
years: "1999" -> "nineteen ninety-nine", "2005" -> "two thousand five"), other numbers."""

from __future__ import annotations

import re
from typing import Any, cast

from num2words import num2words

MONTHS = ("January February March April May June July August September October November December").split()
_MONTH = "(" + "|".join(MONTHS) + ")"
_DIGITS = "zero one two three four five six seven eight nine".split()
_CURRENCY = {
    "$": ("dollar", "dollars", "cent", "cents"),
    "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "¥": ("yen", "yen", "", ""),
}
_SCALE = {
    "k": "thousand",
    "m": "million",
    "bn": "billion",
    "thousand": "thousand",
    "million": "million",
    "billion": "billion",
    "trillion": "trillion",
}
_ABBREVIATIONS = {
    "Mr.": "Mister",
    "Mrs.": "Missus",
    "Ms.": "Miz",
    "Prof.": "Professor",
    "Jr.": "Junior",
    "Sr.": "Senior",
    "Mt.": "Mount",
    "Capt.": "Captain",
    "Gen.": "General",
    "Sgt.": "Sergeant",
    "Lt.": "Lieutenant",
    "Rev.": "Reverend",
    "Fig.": "Figure",
    "approx.": "approximately",
    "e.g.": "for example",
    "i.e.": "that is",
    "etc.": "et cetera",
    "vs.": "versus",
    "vs": "versus",
    "a.k.a.": "also known as",
}
_ROMAN = re.compile(r"M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
_ROMAN_AFTER = r"(Chapter|Part|Book|Volume|Vol\.|Act|Scene|Section|Appendix|Canto|Article|World War)"


def words(n: int | str) -> str:
    """A number in words, without num2words' commas ("one million two hundred ..."); a decimal
    (given as its digits, "1.10") digit by digit after the point, as written: "one point one zero"."""
    if isinstance(n, str):
        whole, _, frac = n.partition(".")
        return f"{words(int(whole))} point {digits(frac)}" if frac else words(int(whole))
    try:
        return cast(str, num2words(n)).replace(",", "")  # num2words is untyped
    except (OverflowError, NotImplementedError):
        return " ".join(_DIGITS[int(d)] for d in str(n) if d.isdigit())


def year(n: int) -> str:
    return cast(str, num2words(n, to="year")).replace("thousand and", "thousand").replace(" oh-", " oh ")


def ordinal(n: int) -> str:
    return cast(str, num2words(n, to="ordinal")).replace(",", "")  # num2words is untyped


def digits(s: str) -> str:
    return " ".join(_DIGITS[int(d)] for d in s if d.isdigit())


def _number(raw: str) -> int | str:
    """A whole number as an int; a decimal kept as its digits (a float would read "1.10" as "1.1"
    and cut long decimals)."""
    raw = raw.replace(",", "")
    return raw if "." in raw else int(raw)


def _end(m: re.Match[str] | _Half, spoken: str) -> str:
    """`spoken` for an abbreviation whose period also ended the sentence: keep that period."""
    return spoken + "." if m.group().endswith(".") and m.end() == len(m.string) else spoken


def _email(m: re.Match[str]) -> str:
    user, domain = m.group(1), m.group(2)
    return f"{_spell_address(user)} at {_spell_address(domain)}"


def _spell_address(s: str) -> str:
    for sym, name in ((".", " dot "), ("-", " dash "), ("_", " underscore "), ("/", " slash "), ("+", " plus ")):
        s = s.replace(sym, name)
    return re.sub(r"\d+", lambda d: digits(d.group()), s)


def _url(m: re.Match[str]) -> str:
    url = m.group()
    tail = re.search(r"[.,;:!?)]+$", url)
    trail = tail.group() if tail else ""
    url = url[: len(url) - len(trail)]
    url = re.sub(r"^https?://", "", url, flags=re.I).rstrip("/")
    spoken = re.sub(r"^www\.", "w w w dot ", url, flags=re.I)
    spoken = re.sub(r"[?=&#:]", " ", spoken)
    return _spell_address(spoken) + trail


def _currency(m: re.Match[str]) -> str:
    one, many, cent, cents = _CURRENCY[m.group(1)]
    whole, frac, scale = m.group(2), m.group(3), m.group(4)
    if scale:
        amount = words(_number(whole + ("." + frac if frac else "")))
        return f"{amount} {_SCALE[scale.lower()]} {many}"
    n = int(whole.replace(",", ""))
    sub = int((frac + "0")[:2]) if frac and cent else 0
    parts = []
    if n or not sub:
        parts.append(f"{words(n)} {one if n == 1 else many}")
    if sub:
        parts.append(words(sub) if n else f"{words(sub)} {cent if sub == 1 else cents}")
    return " ".join(parts)


def _day_month(day: str, month: str, yr: str | None) -> str:
    return f"the {ordinal(int(day))} of {month}" + (f" {year(int(yr))}" if yr else "")


def _month_day(m: re.Match[str]) -> str:
    return f"{m.group(1)} {ordinal(int(m.group(2)))}" + (f", {year(int(m.group(3)))}" if m.group(3) else "")


def _iso_date(m: re.Match[str]) -> str:
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if not (1 <= mo <= 12 and 1 <= d <= 31):
        return m.group()
    return _day_month(str(d), MONTHS[mo - 1], str(y))


def _time(m: re.Match[str] | _Half) -> str:
    h, mins, half = int(m.group(1)), m.group(2), m.group(3)
    if h > 24 or (mins and int(mins) > 59):
        return m.group()
    spoken = words(h)
    if mins and mins != "00":
        spoken += " " + (f"oh {words(int(mins))}" if mins.startswith("0") else words(int(mins)))
    elif not half:
        spoken += " o'clock" if h <= 12 else " hundred"
    if half:
        spoken += " AM" if half.lower() == "a" else " PM"
    return _end(m, spoken)


def _phone(m: re.Match[str]) -> str:
    if sum(c.isdigit() for c in m.group()) < 7:
        return m.group()
    groups = re.findall(r"\d+", m.group())
    return ("plus " if m.group().startswith("+") else "") + ", ".join(digits(g) for g in groups)


def roman_value(s: str) -> int:
    if not s or not _ROMAN.fullmatch(s):
        return 0
    values = [_ROMAN_VALUES[c] for c in s]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))


def _roman(m: re.Match[str]) -> str:
    n = roman_value(m.group(2))
    return f"{m.group(1)} {words(n).title()}" if n else m.group()


def _abbreviation(m: re.Match[str]) -> str:
    token = m.group()
    return _end(m, _ABBREVIATIONS[token])


def _title(m: re.Match[str], saint_or_doctor: str, place: str) -> str:
    """Dr./St. before a name: Doctor/Saint; after one: Drive/Street."""
    before = m.string[: m.start()].rstrip()
    after = m.string[m.end() :]
    if re.match(r"\s+[A-Z]", after) or not re.search(r"[A-Z]\w*$", before):
        return saint_or_doctor
    return _end(m, place)


def _decade(m: re.Match[str]) -> str:
    spoken = year(int(m.group(1)))
    return spoken[:-1] + "ies" if spoken.endswith("y") else spoken + "s"


def _plain_number(m: re.Match[str]) -> str:
    sign, raw = m.group(1), m.group(2)
    spoken = words(_number(raw))
    return ("minus " if sign else "") + spoken


def normalize_english(text: str, heading: bool = False) -> str:
    sub = re.sub
    text = sub(r"(?<![\w.])([\w.+-]+)@([\w-]+(?:\.[\w-]+)+)", _email, text)
    text = sub(
        r"(?i)\b(?:https?://|www\.)\S+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|edu|gov|io|dev|"
        r"ai|app|info|co\.uk|uk|de|fr|eu)\b(?:/\S*)?",
        _url,
        text,
    )
    text = sub(
        r"([$€£¥])\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:\s?(k|m|bn|thousand|million|billion|trillion)\b)?",
        _currency,
        text,
    )
    text = sub(r"(?<![\w.])(-?)(\d+(?:\.\d+)?)\s?%", lambda m: _plain_number(m) + " percent", text)
    text = sub(r"\b(\d{4})-(\d{2})-(\d{2})\b", _iso_date, text)
    text = sub(
        rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH}(?:,?\s+(\d{{4}}))?\b",
        lambda m: _day_month(m.group(1), m.group(2), m.group(3)),
        text,
    )
    text = sub(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,\s*(\d{{4}}))?\b", _month_day, text)
    text = sub(
        r"\b(1[1-9]\d\d|20\d\d)\s?[-–]\s?(1[1-9]\d\d|20\d\d)\b",
        lambda m: f"{year(int(m.group(1)))} to {year(int(m.group(2)))}",
        text,
    )
    text = sub(r"\b(1[1-9]\d0|20\d0)s\b", _decade, text)
    text = sub(r"\b(\d{1,2}):(\d{2})(?:\s?(?:([ap])\.m\.|([ap])m\b))?", lambda m: _time(_Half(m)), text)
    text = sub(r"(?i)\b(\d{1,2})\s?(?:([ap])\.m\.|([ap])m\b)", lambda m: _time(_Half(m, bare=True)), text)
    text = sub(r"(?<![\w.])(?:\+\d{1,3}[ -]?)?(?:\(\d{2,4}\)\s?)?\d{2,4}(?:[ -]\d{2,4}){1,3}(?![\w.]\w)", _phone, text)
    text = sub(r"(?<![\w.,-])(\d{1,4})\s?[-–]\s?(\d{1,4})(?![\w.,-]\w|-)", r"\1 to \2", text)
    text = sub(r"(?<![\w.,])0\d+(?![\w.,]\w)", lambda m: digits(m.group()), text)
    text = sub(r"\b(\d+)(?:st|nd|rd|th)\b", lambda m: ordinal(int(m.group(1))), text)
    text = sub(rf"\b{_ROMAN_AFTER}\s+([IVXLCDM]+)\b", _roman, text)
    if heading:
        text = sub(r"^([IVXLCDM]+)(?=[.:]|\s*$)", lambda m: words(roman_value(m.group(1))).title() or m.group(), text)
    text = sub(r"\bNo\.(?=\s*\d)", "number", text)
    text = sub(r"\bpp?\.(?=\s*\d)", lambda m: "pages" if m.group() == "pp." else "page", text)
    text = sub(r"\bDr\.", lambda m: _title(m, "Doctor", "Drive"), text)
    text = sub(r"\bSt\.", lambda m: _title(m, "Saint", "Street"), text)
    text = sub(r"(?<![\w.])(?:" + "|".join(re.escape(a) for a in _ABBREVIATIONS) + r")(?!\w)", _abbreviation, text)
    text = sub(r"\s*&\s*", " and ", text)
    text = sub(r"(?<=[\w\s])\+(?=\s*[\d\w])", " plus ", text)
    text = sub(r"\s=\s", " equals ", text)
    text = sub(r"(?<=\d)\s?°\s?C\b", " degrees Celsius", text)
    text = sub(r"(?<=\d)\s?°\s?F\b", " degrees Fahrenheit", text)
    text = sub(r"(?<=\d)\s?°", " degrees", text)
    text = sub(r"#(?=\d)", "number ", text)
    text = sub(r"\s@\s", " at ", text)
    text = sub(r"\b\d+(?:\.\d+){2,}\b", lambda m: " point ".join(words(int(p)) for p in m.group().split(".")), text)
    text = sub(r"(?<![\w.,])(1[1-9]\d\d|20\d\d)(?![\w%]|[.,]\d)", lambda m: year(int(m.group(1))), text)
    text = sub(
        r"(?<![\w.,])([-−]?)(\d{1,3}(?:,\d{3})+|\d+)(?:(\.\d+)(?![.,]\d))?(?![\w]|[.,]\d)", lambda m: _signed(m), text
    )
    return text


def _signed(m: re.Match[str]) -> str:
    sign, whole, frac = m.group(1), m.group(2), m.group(3) or ""
    return ("minus " if sign else "") + words(_number(whole + frac))


class _Half:
    """A time match seen as (hour, minutes, a/p) whatever the pattern's group layout."""

    def __init__(self, m: re.Match[str], bare: bool = False):
        self.m, self.bare = m, bare
        self.string = m.string

    def group(self, i: int = 0) -> str | Any:  # as re.Match.group: None for a group that did not match
        m = self.m
        if i == 0:
            return m.group()
        if self.bare:
            return {1: m.group(1), 2: None, 3: m.group(2) or m.group(3)}[i]
        return {1: m.group(1), 2: m.group(2), 3: m.group(3) or m.group(4)}[i]

    def end(self) -> int:
        return self.m.end()
