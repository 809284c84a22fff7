"""The request, declared once: every option a narration takes, its type, bounds and description
(pydantic v2), and where it is offered. The CLI's options (cli/common.py ``request_options``) and the
HTTP form of ``POST /v1/narrations`` (jobs/web/submitting.py) are generated from this model, both
parse what the caller sent through it, and ``Options.from_fields`` (jobs/api/options.py) turns it
into the ``Options`` that a job, a batch or a schedule is made of.

Every check of a field lives here, as the model's validators: its type and bounds, its domain check
(``_CHECKS``: a language's name, a chapter list, a feed's name, ...) and what fields refuse together.
The caller's spelling travels in the validation context, so an error is worded once, naming the field
as the caller spelled it: ``--sentence-pause`` on the command line, ``sentence_pause_ms`` in the form
(``FieldError``, ``spelled``); nothing rewrites a message afterwards."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from narrate.jobs.audio.bookmeta import parse_readalong
from narrate.jobs.constraints import Frames, Hours, Layout, PauseMs, Retakes, Seed
from narrate.jobs.errors import BadInput
from narrate.jobs.settings import DEFAULT_MODEL, QUANTS, default
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

CLI, QUEUED, HTTP = "cli", "queued", "http"  # submit/run/schedule add; submit and schedule add only; the HTTP form
ALL = (CLI, QUEUED, HTTP)  # QUEUED: a CLI option of the commands with a queue (not `run`)

Quant = Literal["bf16", "4bit", "6bit", "8bit", "float32"]
InputFormat = Literal["txt", "md", "epub", "html", "pdf"]
Priority = Literal["high", "normal", "low"]
Split = Literal["chapters", "chapters+book"]
assert set(Quant.__args__) == set(QUANTS)  # type: ignore[attr-defined]


def opt(
    description: str,
    *,
    cli: str | None = None,
    where: tuple[str, ...] = (CLI, HTTP),
    metavar: str | None = None,
    form_description: str | None = None,
    show_default: bool = False,
    cli_default: Any = None,
    flag_value: str | None = None,
    **constraints: Any,
) -> Any:
    """A field of the request: `description` is the CLI's help, `form_description` the form's (when
    they differ); `cli` the flag (default: --NAME with dashes); `where` the surfaces that offer it;
    `flag_value`: the flag may be given without a value, meaning this (`--proof` alone: auto)."""
    extra = {
        "cli": cli,
        "where": list(where),
        "metavar": metavar,
        "form": form_description,
        "show_default": show_default,
        "cli_default": cli_default,
        "flag_value": flag_value,
    }
    return Field(constraints.pop("default", None), description=description, json_schema_extra=extra, **constraints)


def _pause(what: str, name: str) -> Any:
    return opt(
        f"Silence {what} in ms (NARRATE_{name.upper()}, default {default(name)}).",
        cli=f"--{name.removesuffix('_ms').replace('_', '-')}",
        metavar="MS",
    )


CHECKED = "narrate_check"  # the error type of a field's domain check (RequestFields._domain)
Check = Callable[[Any, str], object]  # (the value, the field as the caller spells it); raises BadInput or ValueError


def _checks() -> dict[str, tuple[Check, bool]]:
    """Each field's domain check, and whether its message needs the field's name in front (the others word
    it with the spelling they are given). The fields of ``NORMALIZED`` keep what their check returns."""
    from narrate.jobs.api.model_choice import check_model
    from narrate.jobs.audio.bookmeta import check_tag, check_year, parse_loudness
    from narrate.jobs.audio.subtitles import parse_formats
    from narrate.jobs.documents.languages import check_language
    from narrate.jobs.documents.selection import check_chapters
    from narrate.jobs.fanout.split import check_fan_out
    from narrate.jobs.feeds.store import check_feed_name
    from narrate.jobs.library.audiobookshelf import check_url
    from narrate.jobs.proof.recognizer_choice import check_proof
    from narrate.jobs.readalong.aligning import check_aligner

    tag: tuple[Check, bool] = (lambda v, o: check_tag(o, v), False)
    return {
        "model": (lambda v, o: check_model(v), False),  # names the model and --model (HTTP: never a path)
        "language": (lambda v, o: check_language(v), True),
        "chapters": (check_chapters, False),
        "fan_out": (check_fan_out, False),
        "feed": (lambda v, o: check_feed_name(v), True),
        "abs_url": (check_url, False),
        "proof": (check_proof, True),
        "word_timings": (check_aligner, True),
        "subtitles": (lambda v, o: parse_formats(v), True),
        "readalong": (parse_readalong, False),
        "loudness": (parse_loudness, False),
        "year": (check_year, False),
        **dict.fromkeys(("title", "series", "narrator", "author"), tag),
    }


_CHECKS = _checks()
# The fields whose check gives the value a job carries (a model's folder made absolute, a language's code, a
# recognizer's "auto"...): the model keeps that, so what it holds is checked and normalized once.
NORMALIZED = frozenset(
    ("model", "language", "fan_out", "feed", "abs_url", "proof", "word_timings", "subtitles", "readalong", "year")
    + ("title", "series", "narrator", "author")
)


def _spelling(info: ValidationInfo) -> str:
    return str((info.context or {}).get("spelling", CLI))


class RequestFields(BaseModel):
    """What a caller may ask of a narration besides its documents, voice and output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = opt(
        f"Hugging Face id or local checkpoint dir (NARRATE_MODEL on the worker, else {DEFAULT_MODEL}, downloaded "
        "from the Hugging Face hub on first use).",
        form_description="A Hugging Face id (default: the workers' NARRATE_MODEL)",
    )
    quant: Quant | None = opt("Quantization (default: NARRATE_QUANT, else by model).", metavar="|".join(QUANTS))
    seed: Seed | None = opt("Sampling seed of the job (NARRATE_SEED, default 0).")
    max_frames: Frames | None = opt(
        f"Cap on codec frames per sentence (NARRATE_MAX_FRAMES, default {default('max_frames')})."
    )
    priority: Priority = opt("Queue priority.", where=(QUEUED, HTTP), default="normal", show_default=True)
    fan_out: str | None = opt(
        "Spread the book over the worker hosts: a job per chapter, per N minutes of audio (cut at paragraph ends), "
        "or none. Default: chapters when it has chapters and more than one worker host is registered, else none.",
        where=(QUEUED, HTTP),
        metavar="chapters|N|none",
        form_description="chapters, none, or minutes of audio a part",
    )
    feed: str | None = opt(
        "Put the narration in podcast feed NAME (made on first use; `narrate feed show NAME` prints its URL).",
        where=(QUEUED, HTTP),
        metavar="NAME",
        form_description="A podcast feed the narration joins (made on first use; served at /feeds/NAME.xml)",
    )
    overwrite: bool = opt("Replace a file at the output path that narrate did not write.", where=(CLI,), default=False)
    language: str | None = opt(
        "The document's language: en, zh, ja, ko, de, fr, ru, pt, es, it (or its name); auto detects it.",
        cli_default="auto",
        show_default=True,
        form_description="auto (default), en, de, ... or a language's name",
    )
    lexicon: Path | None = opt(
        "Pronunciations: a file of 'word = spoken form' lines (whole words, case-sensitive; # comments)."
    )
    library: Path | None = opt(
        "Export the finished book into this audiobook library (as `narrate export`: on the worker's host; "
        "default: NARRATE_LIBRARY).",
        where=(CLI,),
    )
    library_layout: Layout = opt(
        "The library's layout: abs (Audiobookshelf), plex, flat.",
        cli="--layout",
        where=(CLI,),
        default="abs",
        show_default=True,
    )
    abs_url: str | None = opt(
        "Tell this Audiobookshelf server about the finished book (the worker's NARRATE_ABS_TOKEN): a scan after "
        "the --library export, else an upload. Default: NARRATE_ABS_URL.",
        where=(CLI,),
        metavar="URL",
    )
    sentence_pause_ms: PauseMs | None = _pause("between sentences", "sentence_pause_ms")
    paragraph_pause_ms: PauseMs | None = _pause("between paragraphs", "paragraph_pause_ms")
    chapter_pause_ms: PauseMs | None = _pause("before a chapter", "chapter_pause_ms")
    loudness: str | None = opt(
        "Integrated loudness target (default -19; -16 for a louder book), or off.",
        metavar="LUFS|off",
        form_description="LUFS (default -19) or off",
    )
    subtitles: str | None = opt(
        "Also write subtitles / a timing manifest beside the audio, with its stem.",
        metavar="srt,vtt,json",
        form_description="srt, vtt, json (comma-separated)",
    )
    readalong: str | None = opt(
        "Also write a read-along book beside the audio: epub (EPUB 3 with media overlays, the audio inside), "
        "manifest (a Readium audiobook manifest), w3c (a W3C Audiobooks manifest and its table of contents).",
        metavar="epub,manifest,w3c",
        form_description="epub, manifest, w3c (comma-separated)",
    )
    word_timings: str | None = opt(
        "Find when each word is spoken (a forced aligner hears each sentence): a word-level WebVTT beside the audio "
        "(BOOK.words.vtt) and, with an EPUB, overlays word by word (docs/readalong.md): alone or auto, the "
        "worker's NARRATE_ALIGN_MODEL; or an aligner's Hugging Face id or local dir. Off by default.",
        metavar="[MODEL]",
        flag_value="auto",
        form_description="auto, or a forced aligner's Hugging Face id: word timings for the read-along (default: off)",
    )
    title: str | None = opt("Title tag (default: the document's, or its file name).")
    series: str | None = opt(
        "Series and position (default: an EPUB's own): tags and a library export's folder.",
        metavar='"NAME #N"',
        form_description='Series and position, "Name #2" (default: an EPUB\'s own)',
    )
    narrator: str | None = opt("Narrator tag.")
    author: str | None = opt("Author tag (default: the document's, if it has one).")
    year: str | None = opt("Year tag.")
    cover: Path | None = opt("Cover art (JPEG or PNG).")
    split: Split | None = opt("One file per chapter (in a folder named after the output), instead of or with the book.")
    max_part_hours: Hours | None = opt(
        "Write the book file in parts of at most H hours, cut at chapter boundaries.", metavar="H"
    )
    chapters: str | None = opt(
        "Read only these chapters, numbered as `narrate chapters DOC` lists them (default: all).",
        metavar="1-3,5",
        form_description="Only these chapters, as `narrate chapters` numbers them: 1-3,5 (repeated or comma-separated)",
    )
    include_front_matter: bool = opt(
        "EPUB: also read the cover, contents and copyright pages (skipped by default).", default=False
    )
    input_format: InputFormat | None = opt(
        "Read the documents as this format (default: by extension; unknown extensions are text)."
    )

    proof: str | None = opt(
        "Hear every sentence back with speech recognition and synthesize the flagged ones again (docs/proof.md): "
        "alone or auto, the worker's NARRATE_PROOF_MODEL, else a recognizer chosen by language; or a speech "
        "recognizer's Hugging Face id or local dir. Off by default.",
        metavar="[MODEL]",
        flag_value="auto",
        form_description="auto, or a speech recognizer's Hugging Face id: hear every sentence back (default: off)",
    )
    retakes: Retakes | None = opt(
        "With --proof: takes of a flagged sentence besides its first, each with a new seed; the best is kept "
        "(default 2).",
        metavar="N",
        form_description="With proof: takes of a flagged sentence besides its first (0-5, default 2)",
    )

    @classmethod
    def parse(cls, raw: dict[str, Any], spelling: str) -> RequestFields:
        """Validate what a caller sent (raises FieldError naming the first bad field as `spelling`, CLI or
        HTTP, spells it). None means "not given"."""
        given = {k: v for k, v in raw.items() if v is not None}
        try:
            return cls.model_validate(given, context={"spelling": spelling})
        except ValidationError as e:
            first = e.errors()[0]
            name = str(first["loc"][0]) if first.get("loc") else ""
            if name not in cls.model_fields:
                raise BadInput(f"unknown option {name!r}") from None
            if first.get("type") == CHECKED:  # a domain check's message, worded in `spelling` already
                raise FieldError(name, first["msg"], spelling) from None
            said = given.get(name)
            shown = f" {str(said)[:60]!r}" if said is not None and not isinstance(said, Path) else ""
            raise FieldError(name, f"{spelled(name, spelling)}{shown}: {_reason(name, first)}", spelling) from None

    @field_validator(*_CHECKS)
    @classmethod
    def _domain(cls, value: Any, info: ValidationInfo) -> Any:
        """Each field's check beyond its type (a language's name, a chapter list, a feed's name, a model's
        folder, ...): its message worded with the field as the caller spells it; the value is kept as given, or
        as the check gives it for the fields of ``NORMALIZED``."""
        name = str(info.field_name)
        if value is None:
            return value
        check, prefixed = _CHECKS[name]
        option = spelled(name, _spelling(info))
        try:
            checked = check(value, option)
        except (BadInput, ValueError) as e:
            said = f"{option}: {e}" if prefixed else str(e)
            raise PydanticCustomError(CHECKED, "{said}", {"said": said}) from None
        return checked if name in NORMALIZED else value

    @model_validator(mode="after")
    def _together(self, info: ValidationInfo) -> RequestFields:
        """What fields refuse together: a read-along book plays the whole book's one file."""
        if self.readalong and parse_readalong(self.readalong) and (self.split == "chapters" or self.max_part_hours):
            s = functools.partial(spelled, spelling=_spelling(info))
            raise FieldError(
                "readalong",
                f"{s('readalong')}: a read-along book plays the whole book's file; not with "
                f"{s('split')} chapters or {s('max_part_hours')} ({s('split')} chapters+book keeps the "
                "book)",
                _spelling(info),
            )
        return self

    def knobs(self) -> dict[str, int | None]:
        """The job's numbers a caller may set (seed, frame cap, pauses), None where not given."""
        return {k: getattr(self, k) for k in KNOBS}


KNOBS = ("seed", "max_frames", "sentence_pause_ms", "paragraph_pause_ms", "chapter_pause_ms")
BOOK = (
    "subtitles",
    "loudness",
    "title",
    "series",
    "narrator",
    "author",
    "year",
    "cover",
    "split",
    "max_part_hours",
    "readalong",
)


def _reason(name: str, error: Any) -> str:
    kind, ctx = error.get("type", ""), error.get("ctx") or {}
    if kind == "literal_error":
        return f"use {ctx.get('expected', 'one of the listed values')}"
    base, low, high = base_type(name)
    if base is int:
        return f"give a whole number from {low} to {high}" if high is not None else "give a whole number"
    if base is float:
        return "give a number above 0" if low == 0 else "give a finite number"
    if base is bool:
        return "give true or false"
    return str(error.get("msg", "not valid"))


def base_type(name: str) -> tuple[Any, Any, Any]:
    """A field's type without None, and its bounds (`ge`/`gt`, `le`): (int, 0, 60000), (str, None, None)."""
    ann = RequestFields.model_fields[name].annotation
    args = [a for a in get_args(ann) if a is not type(None)] if get_origin(ann) in (Union, UnionType) else [ann]
    inner = args[0]
    low = high = None
    if get_origin(inner) is Annotated:
        inner, *meta = get_args(inner)
        for m in (x for info in meta for x in getattr(info, "metadata", [info])):
            low = getattr(m, "ge", getattr(m, "gt", low))
            high = getattr(m, "le", high)
    return inner, low, high


def where(name: str) -> tuple[str, ...]:
    return tuple(_extra(name)["where"])


def _extra(name: str) -> dict[str, Any]:
    extra = RequestFields.model_fields[name].json_schema_extra
    assert isinstance(extra, dict)
    return extra


# The request's parts that are not fields of the model yet (the document, the voice and cast, the output and its
# time): their CLI spelling, for messages that name them.
OTHER_FLAGS = {
    "format": "--format",
    "at": "--at",
    "in": "--in",
    "markup": "--markup",
    "voice": "--voice",
    "dialogue_voice": "--dialogue-voice",
    "cast_voice": "--voice NAME=VOICE",
    "strict": "--strict",
}


def flag(name: str) -> str:
    """The CLI's spelling of a field: --sentence-pause, --layout, --max-part-hours."""
    if name in OTHER_FLAGS:
        return OTHER_FLAGS[name]
    return str(_extra(name)["cli"] or f"--{name.replace('_', '-')}")


def spelled(name: str, spelling: str) -> str:
    return flag(name) if spelling == CLI else name


class FieldError(BadInput):
    """A field's value is refused: `param` the field (as the model names it), the message worded in the
    caller's `spelling` (the CLI's --flag, the API's field name) where it was made."""

    param: str  # always a field (NarrateError's may be None)

    def __init__(self, param: str, message: str, spelling: str = CLI) -> None:
        super().__init__(message, param=param)
        self.spelling = spelling


@contextmanager
def about(name: str, spelling: str = CLI) -> Iterator[None]:
    """Inside: a BadInput is about field `name` (a FieldError with its message, which names the file it read)."""
    try:
        yield
    except FieldError:
        raise
    except BadInput as e:
        raise FieldError(name, str(e), spelling) from None


def form_schema(surface: str = HTTP) -> dict[str, dict[str, Any]]:
    """The JSON schema of each field a surface offers, as one property of a multipart form."""
    schema = RequestFields.model_json_schema()
    props = {}
    for name, prop in schema["properties"].items():
        extra = _extra(name)
        if surface not in extra["where"]:
            continue
        branch = next((b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"), prop)
        out = {k: v for k, v in branch.items() if k not in ("title", "default", *extra)}
        if branch.get("format") == "path":
            out = {"type": "string", "format": "binary"}
        out["description"] = extra["form"] or prop.get("description", "")
        if "enum" in branch or "const" in branch:
            out["enum"] = branch.get("enum") or [branch["const"]]
            out.pop("const", None)
        props[name] = out
    return props
