"""`POST /v1/narrations`: a multipart form (jobs/web/uploads.py) read into the request type of
`narrate submit` (jobs/api/request.py `Options.make`, jobs/voices/choice.py `choose`,
jobs/api/batch.py `prepare_batch`, jobs/api/when.py), every document and the voice checked before
anything is stored or enqueued (jobs/api/submit.py `submit_many`), and the narrations it made.

Each output goes to ``narrations/STEM-DIGEST.EXT`` under the output root: the digest is of the
document's bytes, the voice and the options, so the same request names the same output (and gets
the same content-derived job id), and two different ones never share a file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from narrate.jobs.api import batch, when
from narrate.jobs.api import submit as submit_api
from narrate.jobs.api.casting import CastChoice
from narrate.jobs.api.request import Options
from narrate.jobs.cast.declare import LABEL, parse_voice_args
from narrate.jobs.cast.reading import MARKUPS, make_reading
from narrate.jobs.documents.voicing import NARRATOR
from narrate.jobs.errors import BadInput
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.outputs.outputs import FORMATS
from narrate.jobs.settings import Settings
from narrate.jobs.voices.choice import VoiceChoice, choose
from narrate.jobs.web import callbacks, speaking, views
from narrate.jobs.web.errors import ApiError
from narrate.jobs.web.schemas import binary, multipart, text
from narrate.jobs.web.state import Web
from narrate.jobs.web.uploads import Form, Upload

OUTPUT_FOLDER = "narrations"
FORMAT_NAMES = sorted(ext.lstrip(".") for ext in FORMATS)
INTS = {"seed": "seed", "max_frames": "max_frames", "sentence_pause_ms": "sentence_pause_ms",
        "paragraph_pause_ms": "paragraph_pause_ms", "chapter_pause_ms": "chapter_pause_ms"}  # fmt: skip
BOOK_FIELDS = ("subtitles", "loudness", "title", "series", "narrator", "author", "year", "split")
FORM = multipart(
    {
        "file": {"type": "array", "items": binary("A document (txt, md, epub, html, pdf); repeat for several")},
        "text": text("The text to narrate (instead of file)"),
        "voice": text("A saved voice, a preset speaker, or a sample as a data: URL"),
        "voice_sample": binary("A voice sample to clone (1-60 s of speech), instead of voice"),
        "instruct": text("How a preset speaker speaks (1.7B CustomVoice models)"),
        "format": {"type": "string", "enum": FORMAT_NAMES, "description": "The output format (default mp3)"},
        "language": text("auto (default), en, de, ... or a language's name"),
        "model": text("A Hugging Face id (default: the workers' NARRATE_MODEL)"),
        "quant": {"type": "string", "enum": ["bf16", "4bit", "6bit", "8bit"]},
        "input_format": {"type": "string", "enum": ["txt", "md", "epub", "html", "pdf"]},
        "include_front_matter": {"type": "boolean"},
        "chapters": text(
            "Only these chapters, as `narrate chapters` numbers them: 1-3,5 (repeated or comma-separated)"
        ),
        "at": text("Run at this time (ISO 8601: 2026-12-01T02:00+01:00)"),
        "in": text("Run after this delay (30s, 90m, 2h, 1d)"),
        "priority": {"type": "string", "enum": ["high", "normal", "low"]},
        "fan_out": text("chapters, none, or minutes of audio a part"),
        "seed": {"type": "integer", "minimum": 0},
        "max_frames": {"type": "integer", "minimum": 1},
        "sentence_pause_ms": {"type": "integer", "minimum": 0},
        "paragraph_pause_ms": {"type": "integer", "minimum": 0},
        "chapter_pause_ms": {"type": "integer", "minimum": 0},
        "subtitles": text("srt, vtt, json (comma-separated)"),
        "loudness": text("LUFS (default -19) or off"),
        "title": text("Title tag (default: the document's)"),
        "series": text('Series and position, "Name #2" (default: an EPUB\'s own)'),
        "narrator": text("Narrator tag"),
        "author": text("Author tag"),
        "year": text("Year tag"),
        "cover": binary("Cover art (JPEG or PNG)"),
        "split": {"type": "string", "enum": ["chapters", "chapters+book"]},
        "max_part_hours": {"type": "number", "exclusiveMinimum": 0},
        "lexicon": binary("Pronunciations: 'word = spoken form' lines"),
        "feed": text("A podcast feed the narration joins (made on first use; served at /feeds/NAME.xml)"),
        "callback_url": text("Gets one POST of the narration at its end (hosts in NARRATE_CALLBACK_HOSTS only)"),
        "cast_voice": {
            "type": "array",
            "items": text(
                "A cast member: alice=NAME (a saved voice, a preset speaker or a sample as a data: URL), or "
                "alice:whisper=NAME for a variant; repeat for each. The narrator is voice or voice_sample"
            ),
        },
        "markup": {
            "type": "string",
            "enum": list(MARKUPS),
            "description": "How the text names its speakers: narrate's [alice]...[/] tags (default) or an importer",
        },
        "dialogue_voice": text("Quoted dialogue in this voice: a cast member, or a voice as for cast_voice"),
        "strict": {"type": "boolean", "description": "A tag that names no cast member is an error, not text"},
    }
)

FIELDS = FORM["requestBody"]["content"]["multipart/form-data"]["schema"]["properties"]


def _int(form: Form, name: str) -> int | None:
    raw = form.value(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, f"{name}={raw[:40]!r} is not a whole number", name) from None


def _float(form: Form, name: str) -> float | None:
    raw = form.value(name)
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        raise ApiError(400, f"{name}={raw[:40]!r} is not a number", name) from None


def _documents(form: Form) -> list[Upload]:
    files = form.files.get("file", [])
    typed = form.files.get("text", [])
    if files and typed:
        raise ApiError(400, "give documents as file or a text as text, not both", "file")
    if not files and not typed:
        raise ApiError(400, "no document: send file=@book.epub (one or more) or text=...", "file")
    if len(typed) > 1:
        raise ApiError(400, "give one text field (or several files)", "text")
    return files or typed


def options(form: Form, settings: Settings) -> tuple[Options, dict[str, Any]]:
    """The request's Options (checked by Options.make) and the settings it overrides."""
    overrides = {setting: _int(form, name) for name, setting in INTS.items()}
    cover, lexicon = form.file("cover"), form.file("lexicon")
    book: dict[str, Any] = {k: form.value(k) for k in BOOK_FIELDS}
    book.update(cover=cover.path if cover else None, max_part_hours=_float(form, "max_part_hours"))
    made = Options.make(
        model=speaking.check_model(form.value("model") or "", settings) if form.value("model") else None,
        quant=form.value("quant"), input_format=form.value("input_format"),
        include_front_matter=form.flag("include_front_matter"), language=form.value("language"),
        lexicon=lexicon.path if lexicon else None, book=book, fan_out=form.value("fan_out"),
        priority=form.value("priority") or "normal",
        chapters=",".join(v for v in form.fields.get("chapters", []) if v.strip()) or None,
        feed=form.value("feed"),
    )  # fmt: skip
    return made, overrides


def voice(web: Web, settings: Settings, form: Form, opts: Options) -> VoiceChoice:
    sample, named = form.file("voice_sample"), form.value("voice")
    instruct, ffmpeg = form.value("instruct"), ffmpeg_exe(settings.ffmpeg)
    if sample is not None and named is not None:
        raise ApiError(400, "give voice or voice_sample, not both", "voice")
    if sample is not None:
        return choose(web.redis, sample.path, opts.model, ffmpeg, instruct, settings.model)
    if named is None:
        raise ApiError(400, "no voice: send voice=NAME (a saved voice or a preset speaker) or voice_sample=@me.wav",
                       "voice")  # fmt: skip
    return speaking.choose_voice(web.redis, settings, named, opts.model, instruct, form.folder)


def cast_of(web: Web, settings: Settings, form: Form, opts: Options) -> CastChoice | None:
    """The cast of `cast_voice`, `markup`, `dialogue_voice` and `strict` (None: a book of one voice).
    A member's voice is a saved voice, a preset speaker or a data: URL: never a file of the server."""
    args = form.fields.get("cast_voice", [])
    markup, dialogue = form.value("markup"), form.value("dialogue_voice")
    if not args and markup is None and dialogue is None:
        return None
    for arg in args:
        if not LABEL.fullmatch(arg.partition("=")[0].strip().lower()) or "=" not in arg:
            raise ApiError(400, f"cast_voice {arg[:60]!r}: write LABEL=VOICE (alice=grandma); the narrator is voice "
                           "or voice_sample", "cast_voice")  # fmt: skip
    reading = make_reading(parse_voice_args(args), markup, dialogue, form.flag("strict"))
    voices = {}
    for label, arg in reading.cast.voices.items():
        try:
            voices[label] = speaking.choose_voice(web.redis, settings, arg, opts.model, None, form.folder)
        except ApiError as e:
            raise ApiError(400, f"cast voice {label!r}: {e.message}", "cast_voice") from None
    return CastChoice(reading, voices, reading.cast.seed_of(NARRATOR))


def output_name(doc: Upload, choice: VoiceChoice, opts: Options, overrides: dict[str, Any], ext: str,
                cast: list[str] | None = None) -> str:  # fmt: skip
    digest = hashlib.sha256()
    with open(doc.path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    said = [choice.ref.spec_voice, choice.ref.instruct, opts.to_json(), overrides, ext] + ([cast] if cast else [])
    digest.update(json.dumps(said, sort_keys=True, default=str).encode())
    return f"{OUTPUT_FOLDER}/{Path(doc.name).stem or 'document'}-{digest.hexdigest()[:10]}{ext}"


def submit(web: Web, form: Form) -> list[dict[str, Any]]:
    """Check everything, enqueue the narrations (all or none), store the callback; their views."""
    unknown = sorted((set(form.fields) | set(form.files)) - set(FIELDS))
    if unknown:
        raise ApiError(400, f"unknown field {unknown[0][:40]!r}; the fields are listed at /docs", unknown[0])
    docs = _documents(form)
    opts, overrides = options(form, web.settings)
    settings = Settings.from_env(**overrides)
    due = when.due(form.value("at"), form.value("in"))
    url = callbacks.check(form.value("callback_url"), settings.callback_hosts)
    fmt = (form.value("format") or "mp3").lower().lstrip(".")
    if f".{fmt}" not in FORMATS:
        raise BadInput(f"format {fmt!r}: use one of {', '.join(FORMAT_NAMES)}")
    chosen = voice(web, settings, form, opts)
    cast = cast_of(web, settings, form, opts)
    said: list[str] = [*form.fields.get("cast_voice", [])]
    said += [form.value(k) or "" for k in ("markup", "dialogue_voice", "strict")]
    requests = []
    for doc in docs:
        out = output_name(doc, chosen, opts, overrides, f".{fmt}", said if cast else None)
        requests += batch.prepare_batch(settings, [doc.path], chosen, out, fmt, opts, cast)
    subs = submit_api.submit_many(settings, web.redis, requests, at=due)
    ids = [s.job.id for s in subs]
    if url is not None:
        callbacks.store(web.redis, ids, url)
    return [{**views.narration(web.redis, settings, s.job.id), "duplicate": s.duplicate, "note": s.note} for s in subs]
