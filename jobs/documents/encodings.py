"""Turning a document's bytes into text: UTF-8, or UTF-8/16/32 with a byte-order mark (as Windows
Notepad writes UTF-16). Other encodings are refused with the iconv command that converts them:
guessing silently would narrate mojibake, so the guess only goes into the message."""

from __future__ import annotations

import codecs
import re
import shlex

from narrate.jobs.errors import BadInput

# Longest first: the UTF-32LE mark begins with the UTF-16LE one.
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32LE"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32BE"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16LE"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16BE"),
)
_HIGH_RUN = re.compile(rb"[\x80-\xff]+")
_NON_ASCII = re.compile("[^\x00-\x7f]")
_KANA = re.compile("[\u3040-\u30ff]")
_CJK = re.compile("[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")  # with kana, CJK and full-width punctuation
_HANGUL = re.compile("[\uac00-\ud7a3]")
_SIMPLIFIED = set("的是不了在人有我他这个们中来上大为和国地到以说时要就出会")
_RUSSIAN = set("оеаинтсрвлкмдпу")
_GREEK = set("αοιετσνηυρκμπλάέίόήύώ")
_HEBREW = set("יוהלרמתאבנשדםעכק")
_ARABIC = set("اليمونرتبةعدسفكه")
_THAI = set("านรอกเงมยลวดทสตคบปหพแ")
_ALPHABETS = (
    ("cp1251", "WINDOWS-1251", _RUSSIAN),
    ("koi8_r", "KOI8-R", _RUSSIAN),
    ("cp1253", "WINDOWS-1253", _GREEK),
    ("cp1255", "WINDOWS-1255", _HEBREW),
    ("cp1256", "WINDOWS-1256", _ARABIC),
    ("cp874", "TIS-620", _THAI),
)
_TRADITIONAL = set("的是不了在人有我他這個們中來上大為和國地到以說時要就出會")


def decode_text(raw: bytes, origin: str) -> str:
    """The text of a document, or BadInput saying what the bytes look like and how to convert them."""
    for bom, codec, name in BOMS:
        if raw.startswith(bom):
            try:
                text = raw[len(bom) :].decode(codec)
            except UnicodeDecodeError as e:
                raise BadInput(
                    f"{origin} starts with a {name} byte-order mark but is not valid {name} "
                    f"(bad bytes at offset {e.start + len(bom)}); save it again as UTF-8"
                ) from None
            if "\x00" in text:
                raise BadInput(f"{origin} contains NUL characters: it looks binary, not text")
            return text
    if b"\x00" in raw:
        wide = _utf16_without_bom(raw)
        if wide:
            raise BadInput(
                f"{origin} looks like {wide} text without a byte-order mark; convert it to UTF-8: "
                + iconv_command(wide, origin)
            )
        raise BadInput(f"{origin} contains NUL bytes: it looks binary, not text")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = f"bad byte 0x{raw[e.start]:02X} at offset {e.start}"
        lossy = raw.decode("utf-8", "replace")
        invalid, non_ascii = lossy.count("\ufffd"), len(_NON_ASCII.findall(lossy))
        if invalid < 0.1 * (non_ascii - invalid):  # UTF-8 with a few stray bytes, e.g. pasted text
            line = raw.count(b"\n", 0, e.start) + 1
            raise BadInput(
                f"{origin} is UTF-8 but for {invalid} invalid byte(s) (the first is a {bad}, line {line}); "
                f"fix them, or drop them: `iconv -f UTF-8 -t UTF-8 -c {shlex.quote(origin)} > "
                f"{shlex.quote(origin + '.utf8.txt')}`"
            ) from None
        guess = guess_legacy_encoding(raw)
        if guess:
            raise BadInput(
                f"{origin} is not UTF-8 text ({bad}); it looks like {guess}: {iconv_command(guess, origin)}"
            ) from None
        raise BadInput(
            f"{origin} is not UTF-8 text ({bad}); convert it to UTF-8 first: "
            + iconv_command("ENCODING", origin)
            + " (ENCODING is the file's, e.g. WINDOWS-1252, SHIFT_JIS, GBK)"
        ) from None


def iconv_command(encoding: str, origin: str) -> str:
    path = shlex.quote(origin)
    return f"`iconv -f {encoding} -t UTF-8 {path} > {shlex.quote(origin + '.utf8.txt')}`"


def _utf16_without_bom(raw: bytes) -> str | None:
    """UTF-16LE/BE when NUL bytes (the high byte of ASCII characters) fall only on odd or only
    on even offsets and the bytes decode to printable text."""
    if len(raw) % 2:
        return None
    even, odd = raw[0::2].count(0), raw[1::2].count(0)
    for codec, nuls, other in (("UTF-16LE", odd, even), ("UTF-16BE", even, odd)):
        if nuls and not other:
            try:
                text = raw.decode(codec.lower())
            except UnicodeDecodeError:
                return None
            printable = sum(c.isprintable() or c.isspace() for c in text)
            return codec if printable >= 0.95 * len(text) else None
    return None


def _share(pattern: re.Pattern[str], text: str) -> float:
    """The share of the non-ASCII characters of `text` that `pattern` matches."""
    return len(pattern.findall(text)) / max(1, len(_NON_ASCII.findall(text)))


def guess_legacy_encoding(raw: bytes) -> str | None:
    """A likely 8-bit or East Asian encoding of non-UTF-8 text, or None. Western text has
    single accented letters between ASCII ones; other scripts have runs of high bytes, checked
    by decoding with each candidate and looking at what script comes out."""
    runs = _HIGH_RUN.findall(raw)
    if not runs:
        return None
    if sum(len(r) == 1 for r in runs) >= 0.8 * len(runs):
        return "WINDOWS-1252" if re.search(rb"[\x80-\x9f]", raw) else "LATIN1"
    texts = {}
    for codec in ("shift_jis", "euc_jp", "euc_kr", "gbk", "big5", *(a[0] for a in _ALPHABETS)):
        try:
            texts[codec] = raw.decode(codec)
        except UnicodeDecodeError:
            continue
    for codec, name in (("shift_jis", "SHIFT_JIS"), ("euc_jp", "EUC-JP")):
        if codec in texts and _share(_CJK, texts[codec]) >= 0.9 and _share(_KANA, texts[codec]) >= 0.2:
            return name
    if "euc_kr" in texts and _share(_HANGUL, texts["euc_kr"]) >= 0.9:
        return "EUC-KR"
    chinese = {
        name: sum(c in common for c in texts[codec])
        for codec, name, common in (("gbk", "GBK", _SIMPLIFIED), ("big5", "BIG5", _TRADITIONAL))
        if codec in texts and _share(_CJK, texts[codec]) >= 0.9
    }
    if chinese and max(chinese.values()) > 0:
        return max(chinese, key=lambda name: chinese[name])
    # 8-bit alphabets: the share of high bytes that decode to the language's commonest letters.
    scores = {
        name: sum(c in common for c in texts[codec]) / sum(map(len, runs))
        for codec, name, common in _ALPHABETS
        if codec in texts
    }
    best = max(scores, key=lambda name: scores[name], default=None)
    if best and scores[best] >= 0.4:
        return best
    return None
