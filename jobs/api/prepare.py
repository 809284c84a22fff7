"""A request before it is submitted: one document, its voice (or cast), its output and options,
read and checked without touching a server (`prepare`, `prepare_many`; `prepare_read` for callers
that read their inputs themselves, such as a schedule's tick)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from narrate.jobs.api.casting import CastChoice, read_with_cast
from narrate.jobs.api.offline import check_helpers_offline
from narrate.jobs.api.options import DEFAULTS, Options
from narrate.jobs.audio.bookmeta import BookOptions
from narrate.jobs.audio.samples import Voice, read_voice
from narrate.jobs.cast.undeclared import tags_in, warnings
from narrate.jobs.documents.documents import Document
from narrate.jobs.documents.readers import read_any
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.outputs.outputs import EPUB, relative_output
from narrate.jobs.settings import Settings
from narrate.jobs.voices.choice import VoiceChoice


@dataclass(frozen=True)
class Request:
    """A validated narration request: a document, a voice, an output and the options (checked once,
    by ``Options.make``). Building one touches no server."""

    document: Document
    voice: VoiceChoice  # a sample (a file or a saved voice) or a preset speaker (jobs.voices.choice)
    output: str  # relative to the output root
    options: Options = DEFAULTS
    source: str = ""  # the document's file name as given (shown by `narrate list`)
    cast: dict[str, dict] | None = None  # the voices besides the narrator's that it uses (JobSpec.cast)
    cast_samples: tuple[Voice, ...] = ()  # their samples, stored with the job
    cast_line: str | None = None  # the cast in one line, for the person who submits
    narrator_seed: int | None = None  # the cast's seed of the narrator (None: NARRATE_SEED)
    warnings: tuple[str, ...] = ()  # for the person who submits: tag-like brackets that name no voice

    @property
    def model(self) -> str | None:
        return self.options.model

    @property
    def quant(self) -> str | None:
        return self.options.quant

    @property
    def overwrite(self) -> bool:
        return self.options.overwrite

    @property
    def lexicon(self) -> list[list[str]]:
        return self.options.lexicon

    @property
    def book(self) -> BookOptions:
        return self.options.book

    @property
    def fan_out(self) -> str | None:
        return self.options.fan_out

    @property
    def priority(self) -> str:
        return self.options.priority


def prepare(
    settings: Settings,
    document: Path,
    voice: Path | VoiceChoice,
    output: str | Path | None = None,
    options: Options = DEFAULTS,
) -> Request:
    """Read and check one document, the voice and the output path before anything is stored or
    enqueued (raises BadInput). `voice`: a sample file, or a voice chosen by jobs.voices.choice.choose
    (a saved name or a preset speaker). `options`: validated by ``Options.make``."""
    return prepare_many(settings, [document], voice, [output], options)[0]


def prepare_many(
    settings: Settings,
    documents: list[Path],
    voice: Path | VoiceChoice,
    outputs: Sequence[str | Path | None],
    options: Options = DEFAULTS,
    cast: CastChoice | None = None,
) -> list[Request]:
    """`prepare` for several documents with one voice (read once), or a cast (jobs.api.casting):
    each document and output is checked before any request is made, so one bad file refuses them
    all, naming it. An EPUB output (`--format epub`) implies `--readalong epub` (Options.for_output)."""
    options = options.for_output(next((o for o in outputs if o is not None and Path(o).suffix.lower() == EPUB), None))
    if cast is not None:
        return _prepare_cast(settings, documents, voice, outputs, options, cast)
    docs = [read_any(Path(d), options.reading) for d in documents]
    reqs = prepare_read_many(settings, docs, documents, voice, outputs, options)
    return [
        replace(req, warnings=tuple(warnings(Path(d), req.document, tags_in(req.document), cast=False)))
        for d, req in zip(documents, reqs, strict=True)
    ]


def _prepare_cast(
    settings: Settings,
    documents: list[Path],
    voice: Path | VoiceChoice,
    outputs: Sequence[str | Path | None],
    options: Options,
    cast: CastChoice,
) -> list[Request]:
    read = read_with_cast(settings, documents, options, cast)
    base = prepare_read_many(settings, [r.document for r in read], documents, voice, outputs, options)
    return [
        replace(
            req,
            cast=r.spec,
            cast_samples=r.samples,
            cast_line=r.line,
            narrator_seed=cast.narrator_seed,
            warnings=r.warnings,
        )
        for req, r in zip(base, read, strict=True)
    ]


def prepare_read_many(
    settings: Settings,
    docs: list[Document],
    documents: list[Path],
    voice: Path | VoiceChoice,
    outputs: Sequence[str | Path | None],
    options: Options,
) -> list[Request]:
    rels = [
        relative_output(settings.output_dir, out if out is not None else f"{Path(d).stem}.mp3")
        for d, out in zip(documents, outputs, strict=True)
    ]
    check_helpers_offline(settings, docs, options.proof, options.word_timings)  # before synthesis, not after
    v = (
        voice
        if isinstance(voice, VoiceChoice)
        else VoiceChoice.of_sample(read_voice(Path(voice), ffmpeg_exe(settings.ffmpeg)))
    )
    return [
        Request(doc, v, rel, options, source=Path(d).name) for d, doc, rel in zip(documents, docs, rels, strict=True)
    ]


def prepare_read(
    settings: Settings, document: Document, voice: VoiceChoice, output: str | Path, options: Options, source: str = ""
) -> Request:
    """`prepare` for a document and voice already read and checked (a schedule tick reads each file
    once, so what it hashed is what is narrated); the options were checked by ``Options.make``, the
    output is checked here."""
    rel = relative_output(settings.output_dir, output)
    check_helpers_offline(settings, [document], options.proof, options.word_timings)
    return Request(document, voice, rel, options.for_output(output), source=source)
