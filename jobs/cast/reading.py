"""A cast applied to a document as it is read: `CastReading` is the jobs.documents.voicing.Voicing a
reader is given (`ReadOptions.voicing`). Native markup is read in every format; an importer
(`--markup e2a|abogen|jsonl|lines`) rewrites a text file into native markup first; with a dialogue
voice, the quoted speech of each paragraph that holds no tag is read in it (markup wins where
present). `read_cast` reads a document so and reports the tags that name nobody."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from narrate.jobs.cast.declare import Cast
from narrate.jobs.cast.importers import IMPORTERS, import_markup
from narrate.jobs.cast.markup import Marked, read_markup
from narrate.jobs.cast.quotes import speech_spans, split_speech
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.readers import DEFAULT_READING, ReadOptions, read_any
from narrate.jobs.documents.voicing import NARRATOR, Run
from narrate.jobs.errors import BadInput

MARKUPS = ("narrate", *IMPORTERS)
TEXT_FORMATS = ("txt", "md")
DIALOGUE = "dialogue"  # the label of a --dialogue-voice that is not a member of the cast
SHOWN_UNKNOWN = 5


@dataclass(frozen=True)
class CastReport:
    """What reading a document with a cast found besides its sentences: tag-like words and
    importer speakers that name nobody in the cast (as written, first spelling) -> times seen."""

    unknown: dict[str, int] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash(tuple(self.unknown.items()))

    def describe(self, limit: int = SHOWN_UNKNOWN) -> str:
        """`[Fireball] (3 times), [sic]`."""
        shown = [f"{t} ({n} times)" if n > 1 else t for t, n in list(self.unknown.items())[:limit]]
        more = len(self.unknown) - limit
        return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True)
class CastReading:
    """A cast and how its voices are found in a document: `markup` (narrate's, or an importer's),
    `dialogue` (the label quoted speech is read in; None: not split), `strict` (a tag that names
    nobody is an error). Build one with `make_reading`; JSON-able with to_json/from_json."""

    cast: Cast = field(default_factory=Cast)
    markup: str = "narrate"
    dialogue: str | None = None
    strict: bool = False

    def check(self, fmt: str, origin: str) -> None:
        if self.markup in IMPORTERS and fmt not in TEXT_FORMATS:
            raise BadInput(
                f"--markup {self.markup} reads text files, and {origin} is read as {fmt}: export it as text "
                "first, or give --input-format txt"
            )

    def prepare(self, text: str, origin: str) -> str:
        prepared, unknown = self.prepared(text, origin)
        self.refuse(unknown, origin)
        return prepared

    def runs(self, paragraphs: list[str], origin: str) -> list[list[Run]]:
        runs, unknown = self.voiced(paragraphs)
        self.refuse(unknown, origin)
        return runs

    def prepared(self, text: str, origin: str) -> tuple[str, list[str]]:
        """`prepare`, and the importer's speakers that name nobody (never refused here)."""
        if self.markup not in IMPORTERS:
            return text, []
        return import_markup(self.markup, text, self.cast, origin)

    def voiced(self, paragraphs: list[str]) -> tuple[list[list[Run]], list[str]]:
        """`runs`, and the tags that name nobody (never refused here)."""
        marked = [read_markup(p, self.cast) for p in paragraphs]
        unknown = [t for m in marked for t in m.unknown]
        if self.dialogue is None:
            return [m.runs for m in marked], unknown
        return self._with_dialogue(paragraphs, marked, self.dialogue), unknown

    def refuse(self, unknown: list[str], origin: str) -> None:
        """With `strict`, tags that name nobody are one BadInput."""
        if self.strict and unknown:
            found = CastReport(dict(Counter(unknown)))
            raise BadInput(
                f"{origin}: tags name nobody in the cast: {found.describe()}; declare them (--voice NAME=VOICE or "
                "cast.toml), write \\[ to keep a bracket as text, or leave out --strict"
            )

    def _with_dialogue(self, paragraphs: list[str], marked: list[Marked], speech: str) -> list[list[Run]]:
        # The quote tokenizer sees each untagged paragraph's text (escapes undone); a tagged one as
        # written, so that it never continues a quote.
        texts = [p if m.tagged else m.text for p, m in zip(paragraphs, marked, strict=True)]
        spans = speech_spans(texts)
        return [
            m.runs if m.tagged else split_speech(text, found, speech)
            for m, text, found in zip(marked, texts, spans, strict=True)
        ]

    def to_json(self) -> dict[str, Any]:
        return {"cast": self.cast.to_json(), "markup": self.markup, "dialogue": self.dialogue, "strict": self.strict}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CastReading:
        cast = Cast.from_json(data.get("cast") or {})
        return _checked(cast, data.get("markup") or "narrate", data.get("dialogue"), bool(data.get("strict")))


def make_reading(
    cast: Cast,
    markup: str | None = None,
    dialogue_voice: str | None = None,
    strict: bool = False,
    names: tuple[str, str] = ("--markup", "--dialogue-voice"),
) -> CastReading:
    """How to read a document with `cast`. `markup`: "narrate" (None) or an importer's name.
    `dialogue_voice` (`--dialogue-voice`): a member's name or alias, or a voice argument (a file, a
    saved voice, a preset speaker), which joins the cast as the member "dialogue". `names`: how the
    caller spells the two (errors name them, their `param` the field)."""
    label = None
    said = names[1]
    if dialogue_voice is not None:
        if not dialogue_voice.strip():
            raise BadInput(f"{said} is empty: name a cast member or give a voice (FILE|NAME)", param="dialogue_voice")
        label = cast.resolve(dialogue_voice)
        if label == NARRATOR:
            raise BadInput(f"{said} names the narrator: name another voice, or leave it out", param="dialogue_voice")
        if label is None:
            if DIALOGUE in cast.voices:
                raise BadInput(
                    f"{said} {dialogue_voice}: the cast already has a member named {DIALOGUE}; name it "
                    f"({said} {DIALOGUE}) or rename that member",
                    param="dialogue_voice",
                )
            cast = cast.with_voice(DIALOGUE, dialogue_voice.strip())
            label = DIALOGUE
    return _checked(cast, (markup or "narrate").lower(), label, strict, names[0])


def joined_dialogue(declared: Cast, reading: CastReading) -> bool:
    """Whether the reading's dialogue voice joined the `declared` cast as a member of its own (a dialogue voice
    that names no member): what is wrong with that voice is the dialogue voice's, not a cast member's."""
    return reading.dialogue == DIALOGUE and DIALOGUE not in declared.voices


def _checked(cast: Cast, markup: str, dialogue: str | None, strict: bool, said: str = "--markup") -> CastReading:
    if markup not in MARKUPS:
        raise BadInput(f"{said} {markup[:40]!r}: use one of {', '.join(MARKUPS)}", param="markup")
    if dialogue is not None and dialogue not in cast.voices:
        raise BadInput(f"the dialogue voice {dialogue!r} is not in the cast (declared: {', '.join(cast.voices)})")
    return CastReading(cast, markup, dialogue, strict)


class _Collecting:
    """A CastReading that also keeps what it found (for one document's report)."""

    def __init__(self, reading: CastReading) -> None:
        self.reading = reading
        self.found: list[str] = []

    def check(self, fmt: str, origin: str) -> None:
        self.reading.check(fmt, origin)

    def prepare(self, text: str, origin: str) -> str:
        prepared, unknown = self.reading.prepared(text, origin)
        self.found += unknown
        return prepared

    def runs(self, paragraphs: list[str], origin: str) -> list[list[Run]]:
        runs, unknown = self.reading.voiced(paragraphs)
        self.found += unknown
        self.reading.refuse(self.found, origin)
        return runs


def read_cast(path: Path, reading: CastReading, options: ReadOptions = DEFAULT_READING) -> tuple[Document, CastReport]:
    """Read a document with a cast (raises BadInput with one line, as read_any does; with `strict`,
    also for a tag that names nobody): the Document, each sentence labelled (`Document.voices`),
    and what the reading found."""
    collecting = _Collecting(reading)
    doc = read_any(path, replace(options, voicing=collecting))
    return doc, CastReport(dict(Counter(collecting.found)))
