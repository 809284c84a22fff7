"""What a person asks of a narration, apart from the documents, the voice and the output: one type,
validated in one place (``Options.make``), for `narrate submit`, `narrate run`, batches of documents,
`narrate schedule add` (kept with the schedule, as JSON, for every tick) and any later caller.

``Options.make`` checks every option (quantization, model, language, lexicon, output options, fan-out,
priority) and touches no server; a model path is made absolute here, where it was given (the worker
runs in a directory of its own, a schedule's tick in the scheduler's)."""

from __future__ import annotations

import base64
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from narrate.jobs.api.model_choice import check_model
from narrate.jobs.audio.bookmeta import BookOptions
from narrate.jobs.documents.languages import check_language
from narrate.jobs.documents.lexicon import read_lexicon
from narrate.jobs.documents.readers import ReadOptions, check_input_format
from narrate.jobs.documents.selection import check_chapters
from narrate.jobs.fanout.split import check_fan_out
from narrate.jobs.feeds.store import check_feed_name
from narrate.jobs.library.audiobookshelf import check_url
from narrate.jobs.library.layout import check_layout
from narrate.jobs.queue.queues import check_priority
from narrate.jobs.settings import check_quant


@dataclass(frozen=True)
class Options:
    """A request's options, validated (build one with ``Options.make``)."""

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
    library_layout: str = "abs"
    abs_url: str | None = None  # `--abs-url`: the Audiobookshelf server told about the export

    @classmethod
    def make(
        cls,
        *,
        model: str | None = None,
        quant: str | None = None,
        overwrite: bool = False,
        input_format: str | None = None,
        include_front_matter: bool = False,
        language: str | None = None,
        lexicon: Path | None = None,
        book: dict[str, Any] | None = None,
        fan_out: str | None = None,
        priority: str = "normal",
        chapters: str | None = None,
        feed: str | None = None,
        library: str | Path | None = None,
        library_layout: str = "abs",
        abs_url: str | None = None,
    ) -> Options:
        """Check every option (raises BadInput naming the first bad one); reads the lexicon and the
        cover files, touches no server."""
        check_quant(quant)
        return cls(
            model=check_model(model),
            quant=quant,
            overwrite=overwrite,
            reading=ReadOptions(
                check_input_format(input_format) if input_format else None,
                include_front_matter,
                check_language(language),
                chapters=check_chapters(chapters),
            ),
            lexicon=read_lexicon(Path(lexicon)) if lexicon is not None else [],
            book=BookOptions.make(**(book or {})),
            fan_out=check_fan_out(fan_out),
            priority=check_priority(priority),
            feed=check_feed_name(feed) if feed is not None else None,
            library=str(Path(library).expanduser().resolve()) if library else None,
            library_layout=check_layout(library_layout),
            abs_url=check_url(abs_url) if abs_url else None,
        )

    def to_json(self) -> dict[str, Any]:
        """JSON-able (a schedule keeps its options so): the cover as base64."""
        data = asdict(self)
        cover = self.book.cover
        data["book"]["cover"] = base64.b64encode(cover).decode() if cover else None
        if not data["reading"]["chapters"]:
            del data["reading"]["chapters"]  # the same JSON (and output names) as before chapter selection
        if data["feed"] is None:
            del data["feed"]  # likewise before feeds
        if data["library"] is None:
            del data["library"], data["library_layout"]  # and before library exports
        if data["abs_url"] is None:
            del data["abs_url"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Options:
        """What ``to_json`` wrote (already validated when it was made: nothing is read again)."""
        book = dict(data.get("book") or {})
        if book.get("cover"):
            book["cover"] = base64.b64decode(book["cover"])
        known = set(BookOptions.__dataclass_fields__)
        return cls(
            model=data.get("model"),
            quant=data.get("quant"),
            overwrite=bool(data.get("overwrite", False)),
            reading=_reading(data.get("reading") or {}),
            lexicon=[list(e) for e in data.get("lexicon") or []],
            book=BookOptions(**{k: v for k, v in book.items() if k in known}),
            fan_out=data.get("fan_out"),
            priority=data.get("priority", "normal"),
            feed=data.get("feed"),
            library=data.get("library"),
            library_layout=data.get("library_layout", "abs"),
            abs_url=data.get("abs_url"),
        )

    def with_language(self, language: str) -> Options:
        return replace(self, reading=replace(self.reading, language=language))

    @property
    def language(self) -> str:
        return self.reading.language or "auto"


DEFAULTS = Options.make()  # every option at its default


def _reading(data: dict[str, Any]) -> ReadOptions:
    """ReadOptions from its JSON (chapter numbers come back as a list)."""
    return ReadOptions(**{**data, "chapters": tuple(data.get("chapters") or ())})
