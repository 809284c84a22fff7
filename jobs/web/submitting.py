"""`POST /v1/narrations`: a multipart form (jobs/web/uploads.py) read into the request type of
`narrate submit` (the request model, jobs/api/fields.py, and jobs/api/options.py `Options`,
jobs/voices/choice.py `choose`, jobs/api/batch.py `prepare_batch`, jobs/api/when.py), every document
and the voice checked before anything is stored or enqueued (jobs/api/submit.py `submit_many`), and
the narrations it made.

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
from narrate.jobs.api.fields import HTTP, FieldError, RequestFields, form_schema
from narrate.jobs.api.options import Options
from narrate.jobs.cast.declare import LABEL, parse_voice_args
from narrate.jobs.cast.reading import DIALOGUE, MARKUPS, joined_dialogue, make_reading
from narrate.jobs.documents.voicing import NARRATOR
from narrate.jobs.errors import BadInput
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.outputs.outputs import OUTPUTS
from narrate.jobs.settings import Settings
from narrate.jobs.voices.choice import VoiceChoice, choose
from narrate.jobs.web import callbacks, choices, views
from narrate.jobs.web.errors import ApiError
from narrate.jobs.web.schemas import binary, multipart, text
from narrate.jobs.web.state import Web
from narrate.jobs.web.uploads import Form, Upload

OUTPUT_FOLDER = "narrations"
FORMAT_NAMES = sorted(ext.lstrip(".") for ext in OUTPUTS)  # epub: the book as its read-along EPUB
OPTION_FIELDS = form_schema(HTTP)  # the request model's fields the form offers (jobs/api/fields.py)
FORM = multipart(
    {
        "file": {"type": "array", "items": binary("A document (txt, md, epub, html, pdf); repeat for several")},
        "text": text("The text to narrate (instead of file)"),
        "voice": text("A saved voice, a preset speaker, or a sample as a data: URL"),
        "voice_sample": binary("A voice sample to clone (1-60 s of speech), instead of voice"),
        "instruct": text("How a preset speaker speaks (1.7B CustomVoice models)"),
        "format": {
            "type": "string",
            "enum": FORMAT_NAMES,
            "description": "The output format (default mp3; epub: the book as its read-along EPUB, its audio inside)",
        },
        "at": text("Run at this time (ISO 8601: 2026-12-01T02:00+01:00)"),
        "in": text("Run after this delay (30s, 90m, 2h, 1d)"),
        **OPTION_FIELDS,
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


def options(form: Form, settings: Settings) -> Options:
    """The request's Options, parsed and checked by the request model (jobs/api/fields.py; errors name
    the form's field), the job's numbers (seed, frame cap, pauses) among them as sent."""
    raw: dict[str, Any] = {}
    for name, prop in OPTION_FIELDS.items():
        if prop.get("format") == "binary":
            upload = form.file(name)
            raw[name] = upload.path if upload else None
        elif name == "chapters":
            raw[name] = ",".join(v for v in form.fields.get("chapters", []) if v.strip()) or None
        elif prop.get("type") == "boolean":
            raw[name] = form.flag(name)
        else:
            raw[name] = form.value(name)
    if raw["model"]:
        raw["model"] = choices.check_model(raw["model"], settings)
    for helper in ("proof", "word_timings"):  # one model policy for every model field
        if helper in raw:
            raw[helper] = choices.check_helper_model(helper, raw[helper], settings)
    try:
        made = Options.from_fields(RequestFields.parse(raw, HTTP), HTTP)
    except FieldError as e:
        raise ApiError(400, form.plain(str(e)), e.param) from None
    return made


def voice(web: Web, settings: Settings, form: Form, opts: Options) -> VoiceChoice:
    sample, named = form.file("voice_sample"), form.value("voice")
    instruct, ffmpeg = form.value("instruct"), ffmpeg_exe(settings.ffmpeg)
    if sample is not None and named is not None:
        raise ApiError(400, "give voice or voice_sample, not both", "voice")
    if sample is not None:
        return choose(web.redis, sample.path, opts.model, ffmpeg, instruct, settings.model)
    if named is None:
        raise ApiError(
            400, "no voice: send voice=NAME (a saved voice or a preset speaker) or voice_sample=@me.wav", "voice"
        )
    return choices.choose_voice(web.redis, settings, named, opts.model, instruct, form.folder)


def cast_of(web: Web, settings: Settings, form: Form, opts: Options) -> CastChoice | None:
    """The cast of `cast_voice`, `markup`, `dialogue_voice` and `strict` (None: a book of one voice).
    A member's voice is a saved voice, a preset speaker or a data: URL: never a file of the server."""
    args = [a for a in form.fields.get("cast_voice", []) if a.strip()]  # the New page sends its empty inputs too
    markup, dialogue = form.value("markup"), form.value("dialogue_voice")
    if not args and markup is None and dialogue is None:
        return None
    for arg in args:
        if not LABEL.fullmatch(arg.partition("=")[0].strip().lower()) or "=" not in arg:
            raise ApiError(
                400,
                f"cast_voice {arg[:60]!r}: write LABEL=VOICE (alice=grandma); the narrator is voice or voice_sample",
                "cast_voice",
            )
    declared = parse_voice_args(args)
    reading = make_reading(declared, markup, dialogue, form.flag("strict"), ("markup", "dialogue_voice"))
    voices = {}
    for label, arg in reading.cast.voices.items():
        try:
            voices[label] = choices.choose_voice(web.redis, settings, arg, opts.model, None, form.folder)
        except ApiError as e:
            if dialogue is not None and label == DIALOGUE and joined_dialogue(declared, reading):
                raise ApiError(400, f"dialogue_voice {dialogue[:60]!r}: {e.message}", "dialogue_voice") from None
            raise ApiError(400, f"cast voice {label!r}: {e.message}", "cast_voice") from None
    return CastChoice(reading, voices, reading.cast.seed_of(NARRATOR))


def output_name(doc: Upload, choice: VoiceChoice, opts: Options, ext: str, cast: list[str] | None = None) -> str:
    digest = hashlib.sha256()
    with open(doc.path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    said: list[Any] = [choice.ref.spec_voice, choice.ref.instruct, opts.to_json(knobs=False), opts.knobs(), ext]
    said += [cast] if cast else []
    digest.update(json.dumps(said, sort_keys=True, default=str).encode())
    return f"{OUTPUT_FOLDER}/{Path(doc.name).stem or 'document'}-{digest.hexdigest()[:10]}{ext}"


def submit(web: Web, form: Form) -> list[dict[str, Any]]:
    """Check everything, enqueue the narrations (all or none), store the callback; their views."""
    unknown = sorted((set(form.fields) | set(form.files)) - set(FIELDS))
    if unknown:
        raise ApiError(400, f"unknown field {unknown[0][:40]!r}; the fields are listed at /docs", unknown[0])
    docs = _documents(form)
    opts = options(form, web.settings)
    settings = web.settings
    due = when.due(form.value("at"), form.value("in"), spelling=HTTP)
    url = callbacks.check(form.value("callback_url"), settings.callback_hosts)
    fmt = (form.value("format") or "mp3").lower().lstrip(".")
    if f".{fmt}" not in OUTPUTS:
        raise BadInput(f"format {fmt[:40]!r}: use one of {', '.join(FORMAT_NAMES)}", param="format")
    try:
        opts.for_output(f"book.{fmt}", HTTP)  # what an EPUB output refuses, in the form's words
    except FieldError as e:
        raise ApiError(400, str(e), e.param) from None
    chosen = voice(web, settings, form, opts)
    cast = cast_of(web, settings, form, opts)
    said: list[str] = [a for a in form.fields.get("cast_voice", []) if a.strip()]
    said += [form.value(k) or "" for k in ("markup", "dialogue_voice", "strict")]
    requests = []
    for doc in docs:
        out = output_name(doc, chosen, opts, f".{fmt}", said if cast else None)
        requests += batch.prepare_batch(settings, [doc.path], chosen, out, fmt, opts, cast)
    if url is not None:  # a narration keeps the callback URL it was first given (409 before anything is enqueued)
        callbacks.check_bound(web.redis, settings, requests, url)
    subs = submit_api.submit_many(settings, web.redis, requests, at=due)
    if url is not None:
        callbacks.store(web.redis, [(s.job.id, s.duplicate) for s in subs], url)
    return [{**views.narration(web.redis, settings, s.job.id), "duplicate": s.duplicate, "note": s.note} for s in subs]
