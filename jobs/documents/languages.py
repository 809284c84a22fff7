"""The document's language: the names narrate accepts (`--language`), detection when it is "auto",
and what each step calls it (sentencex and num2words take ISO codes, Qwen3-TTS takes English names).

A document carries its language as an ISO 639-1 code (`Document.language`). It comes from, in
order: `--language` when given, the document's own metadata (a reader may fill `metadata` in
`resolve_language`, e.g. an EPUB's dc:language), detection on the text (langdetect), English.
A passage of an EPUB or HTML document marked as another language (a `lang`/`xml:lang` attribute
inside the body) is split, normalized and spoken in that one (`Document.languages`)."""

from __future__ import annotations

import re

from narrate.jobs.errors import BadInput

AUTO = "auto"
DEFAULT = "en"
# ISO 639-1 code -> the name Qwen3-TTS's codec knows (its `language` argument).
TTS_NAMES = {
    "zh": "chinese",
    "en": "english",
    "ja": "japanese",
    "ko": "korean",
    "de": "german",
    "fr": "french",
    "ru": "russian",
    "pt": "portuguese",
    "es": "spanish",
    "it": "italian",
}
_BY_NAME = {name: code for code, name in TTS_NAMES.items()}
_DETECT_CHARS = 20_000  # enough text for a confident guess, cheap on a whole book


def check_language(value: str | None) -> str:
    """A `--language` value as "auto" or an ISO code: codes (en, de, zh-CN, pt_BR) and English
    names (German) of the languages the model speaks. Raises BadInput for anything else."""
    raw = (value or AUTO).strip()
    lowered = raw.lower()
    if lowered == AUTO:
        return AUTO
    code = re.split(r"[-_]", lowered, maxsplit=1)[0]
    if code in TTS_NAMES:
        return code
    if lowered in _BY_NAME:
        return _BY_NAME[lowered]
    known = ", ".join(f"{c} ({n.capitalize()})" for c, n in TTS_NAMES.items())
    raise BadInput(f"unknown language {raw!r}: use auto or one of {known}")


def detect_language(text: str) -> str:
    """The language of `text` as one of TTS_NAMES' codes; English when unsure or unsupported."""
    from langdetect import DetectorFactory, LangDetectException, detect

    DetectorFactory.seed = 0  # langdetect samples at random: the same text must give the same answer
    sample = text[:_DETECT_CHARS]
    try:
        found = detect(sample)
    except LangDetectException:  # no letters at all
        return DEFAULT
    code = found.split("-")[0]  # zh-cn, zh-tw
    return code if code in TTS_NAMES else DEFAULT


def resolve_language(requested: str | None, text: str, metadata: str | None = None) -> str:
    """The document's language: `requested` unless "auto", else the metadata's (when the model
    speaks it), else detected from `text`."""
    lang = check_language(requested)
    if lang != AUTO:
        return lang
    if metadata:
        try:
            found = check_language(metadata)
        except BadInput:
            found = AUTO
        if found != AUTO:
            return found
    return detect_language(text)


def passage_language(marked: str | None, document: str) -> str:
    """The language of a passage marked `marked` (a lang attribute, e.g. "fr" or "de-AT") in a
    document in `document`: the marked one where the model speaks it, else the document's."""
    if not marked:
        return document
    try:
        code = check_language(marked)
    except BadInput:
        return document
    return document if code == AUTO else code


def tts_name(code: str) -> str:
    """What Qwen3-TTS calls a language ("auto" for a code it does not know)."""
    return TTS_NAMES.get(code, AUTO)
