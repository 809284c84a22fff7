"""What a person asks of a narration, apart from the documents, the voice and the output: one type,
declared once (jobs/api/fields.py ``RequestFields``) and checked in one place
(``Options.from_fields``), for `narrate submit`, `narrate run`, batches of documents, `narrate
schedule add` (kept with the schedule, as JSON, for every tick), the HTTP API and any later caller.

``Options.from_fields`` checks every option (quantization, model, language, lexicon, output options,
fan-out, priority, the proof pass, the job's seed, frame cap and pauses) and touches no server; a model path is
made absolute here, where it was given (the worker runs in a directory of its own, a schedule's tick
in the scheduler's)."""

from __future__ import annotations

import base64
import functools
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from narrate.jobs.api.fields import BOOK, CLI, KNOBS, FieldError, RequestFields, about, spelled
from narrate.jobs.audio.bookmeta import BookOptions, parse_loudness, read_cover
from narrate.jobs.constraints import Layout
from narrate.jobs.documents.languages import check_language
from narrate.jobs.documents.lexicon import read_lexicon
from narrate.jobs.documents.readers import ReadOptions
from narrate.jobs.documents.selection import check_chapters
from narrate.jobs.outputs.outputs import EPUB
from narrate.jobs.settings import Settings


@dataclass(frozen=True)
class Options:
    """A request's options, validated (build one with ``Options.make`` or ``RequestFields.options``)."""

    model: str | None = None  # a hub id, or an absolute checkpoint path; None: the worker's NARRATE_MODEL
    quant: str | None = None
    overwrite: bool = False  # replace a file at the output path that narrate did not write
    reading: ReadOptions = ReadOptions()  # input format, EPUB front matter, language ("auto" or a code)
    lexicon: list[list[str]] = field(default_factory=list)  # `--lexicon` entries, read where it was given
    book: BookOptions = BookOptions()  # output options: subtitles, loudness, tags, cover, split, parts
    fan_out: str | None = None  # chapters, none, minutes a part; None: the default rule (jobs.fanout.split)
    priority: str = "normal"
    feed: str | None = None  # `--feed NAME`: the podcast feed the narration joins (jobs/feeds)
    library: str | None = None  # `--library DIR`: the worker exports the finished book there (an absolute path)
    library_layout: Layout = "abs"
    abs_url: str | None = None  # `--abs-url`: the Audiobookshelf server told about the export
    proof: str | None = None  # `--proof`: "auto", a recognizer's hub id or absolute dir (jobs/proof); None: off
    retakes: int | None = None  # `--retakes`: takes of a flagged sentence besides its first (None: 2)
    word_timings: str | None = None  # `--word-timings`: "auto", an aligner's hub id or absolute dir; None: off
    # The job's numbers (None: the submitting host's NARRATE_SEED, NARRATE_MAX_FRAMES, NARRATE_*_PAUSE_MS):
    seed: int | None = None
    max_frames: int | None = None
    sentence_pause_ms: int | None = None
    paragraph_pause_ms: int | None = None
    chapter_pause_ms: int | None = None

    @classmethod
    def make(cls, *, book: dict[str, Any] | None = None, **given: Any) -> Options:
        """Options from keyword arguments named as RequestFields' fields (`book`: the book options
        among them as one dict), checked by the request model (raises FieldError naming the first bad
        one); reads the lexicon and the cover files, touches no server."""
        return cls.from_fields(RequestFields.parse({**(book or {}), **given}, CLI))

    @classmethod
    def from_fields(cls, f: RequestFields, spelling: str = CLI) -> Options:
        """The options of a validated request (its fields were checked, and normalized where a job carries another
        form, by the model: fields.NORMALIZED): the chapters' numbers, the lexicon's and the cover's files read (an
        error names the field as `spelling` spells it)."""
        language, chapters = f.language or check_language(None), check_chapters(f.chapters)
        with about("lexicon", spelling):
            lexicon = read_lexicon(Path(f.lexicon)) if f.lexicon is not None else []
        with about("cover", spelling):
            cover = read_cover(f.cover) if f.cover is not None else None
        made_book = BookOptions(
            **{name: getattr(f, name) for name in BOOK}
            | {name: getattr(f, name) or "" for name in ("subtitles", "split", "readalong")}
            | {"loudness": parse_loudness(f.loudness), "cover": cover}
        )
        kept = "epub" in made_book.readalong.split(",")  # a read-along EPUB marks up the pages read
        return cls(
            model=f.model,
            quant=f.quant,
            overwrite=f.overwrite,
            reading=ReadOptions(f.input_format, f.include_front_matter, language, chapters=chapters, keep_source=kept),
            lexicon=lexicon,
            book=made_book,
            fan_out=f.fan_out,
            priority=f.priority,
            feed=f.feed,
            library=str(Path(f.library).expanduser().resolve()) if f.library else None,
            library_layout=f.library_layout,
            abs_url=f.abs_url or None,
            proof=f.proof,
            retakes=f.retakes,
            word_timings=f.word_timings,
            **f.knobs(),
        )

    def for_output(self, output: str | Path | None, spelling: str = CLI) -> Options:
        """These options for an output: for an EPUB (`--format epub`, `-o book.epub`), the book delivered as its
        read-along EPUB: `--readalong epub` implied (an EPUB document kept whole, its pages marked up); what
        needs an audio file beside it is refused (BadInput saying what to write instead)."""
        if output is None or Path(output).suffix.lower() != EPUB:
            return self
        book, s = self.book, functools.partial(spelled, spelling=spelling)
        instead = "-o book.m4b --readalong epub" if spelling == CLI else "format=m4b readalong=epub"
        whole = f"an EPUB output ({s('format')} epub) is one read-along EPUB holding the whole book's audio"
        if book.split:
            with_book = f"{instead} {s('split')} chapters+book"
            raise FieldError(
                "split",
                f"{whole}; not with {s('split')} (chapter files beside the book and its read-along EPUB: {with_book})",
                spelling,
            )
        if book.max_part_hours is not None:
            raise FieldError("max_part_hours", f"{whole}; not with {s('max_part_hours')}", spelling)
        beside = [f for f in book.readalong.split(",") if f in ("manifest", "w3c")]
        if beside:
            raise FieldError(
                "readalong",
                f"an EPUB output ({s('format')} epub) holds its audio inside: "
                f"{s('readalong')} {beside[0]} (a manifest of an audio file beside it) cannot go with "
                f"it (write {instead},{','.join(beside)})",
                spelling,
            )
        if self.feed:
            raise FieldError(
                "feed",
                f"an EPUB output ({s('format')} epub) is not audio: a podcast feed's episodes "
                f"are audio files (write {instead})",
                spelling,
            )
        return replace(self, book=replace(book, readalong="epub"), reading=replace(self.reading, keep_source=True))

    def knobs(self) -> dict[str, int | None]:
        """The job's numbers as given (None: not given)."""
        return {k: getattr(self, k) for k in KNOBS}

    def knob(self, name: str, settings: Settings) -> int:
        """One of the job's numbers: as given, else as `settings` (this host's NARRATE_*) have it."""
        given = getattr(self, name)
        return int(given if given is not None else getattr(settings, name))

    def with_knobs_of(self, settings: Settings) -> Options:
        """These options with every number not given taken from `settings` (a schedule keeps them so)."""
        numbers: dict[str, Any] = {k: self.knob(k, settings) for k in KNOBS}
        return replace(self, **numbers)

    def to_json(self, knobs: bool = True) -> dict[str, Any]:
        """JSON-able (a schedule keeps its options so): the cover as base64; what is unset is left out,
        so that a request made before an option existed keeps its JSON. `knobs`: with the numbers."""
        data = asdict(self)
        cover = self.book.cover
        data["book"]["cover"] = base64.b64encode(cover).decode() if cover else None
        if not data["reading"]["chapters"]:
            del data["reading"]["chapters"]  # the same JSON (and output names) as before chapter selection
        if data["library"] is None:
            del data["library_layout"]  # and before library exports
        if not data["book"]["readalong"]:
            del data["book"]["readalong"]  # and before read-along books
        if not data["reading"]["keep_source"]:
            del data["reading"]["keep_source"]
        for name in ("feed", "library", "abs_url", "proof", "retakes", "word_timings", *KNOBS):
            if data[name] is None or (name in KNOBS and not knobs):
                del data[name]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Options:
        """What ``to_json`` wrote (already validated when it was made: nothing is read again); what it left out
        takes its default."""
        book = dict(data.get("book") or {})
        if book.get("cover"):
            book["cover"] = base64.b64decode(book["cover"])
        nested = {"book", "reading", "lexicon"}
        return cls(
            **{f.name: data[f.name] for f in fields(cls) if f.name in data and f.name not in nested},
            reading=_reading(data.get("reading") or {}),
            lexicon=[list(e) for e in data.get("lexicon") or []],
            book=BookOptions(**{f.name: book[f.name] for f in fields(BookOptions) if f.name in book}),
        )

    @property
    def language(self) -> str:
        return self.reading.language or "auto"


DEFAULTS = Options.make()  # every option at its default


def _reading(data: dict[str, Any]) -> ReadOptions:
    """ReadOptions from its JSON (chapter numbers come back as a list)."""
    return ReadOptions(**{**data, "chapters": tuple(data.get("chapters") or ())})
