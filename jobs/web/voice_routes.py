"""`/v1/audio/voices`: the voice library over HTTP (jobs/api/voice_actions.py, as `narrate voice`).
`GET` is Kokoro-FastAPI's list shape (`{"voices": [{"id", "name", ...}]}`, which Open WebUI reads);
`POST` takes vLLM-Omni's multipart upload fields (`name`, `audio_sample`, `consent`, `ref_text`,
`description` or `speaker_description`); `DELETE` is refused while queued jobs or schedules name
the voice, unless `force`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from narrate.jobs.api import voice_actions as voices_api
from narrate.jobs.errors import NarrateError
from narrate.jobs.voices import voice_library
from narrate.jobs.voices.names import check_name
from narrate.jobs.web.auth import SIGNED_IN
from narrate.jobs.web.choices import check_model
from narrate.jobs.web.errors import ApiError, api_error, documented, message_of
from narrate.jobs.web.schemas import Voice as VoiceModel
from narrate.jobs.web.schemas import VoiceDeleted, VoiceList, binary, multipart, text
from narrate.jobs.web.state import Web, WebDep
from narrate.jobs.web.uploads import Form, read_form
from starlette.concurrency import run_in_threadpool

router = APIRouter(tags=["voices"], dependencies=[SIGNED_IN])
UPLOAD = multipart(
    {
        "name": text("The voice's name: 1-64 letters, digits, - or _"),
        "audio_sample": binary("1-60 s of one person's clean speech (wav, flac, mp3, m4a)"),
        "consent": {"type": "boolean", "description": "true: you have the right to use this voice (required)"},
        "ref_text": text("What the sample says"),
        "description": text("What the voice is"),
        "speaker_description": text("vLLM-Omni's name for description"),
    },
    required=["name", "audio_sample", "consent"],
)


def _voice(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["name"], **{k: v for k, v in row.items() if k != "id"}}


@router.get("/v1/audio/voices", response_model=VoiceList, responses=documented(400, 401, 403))
def list_voices(
    web: WebDep, model: Annotated[str | None, Query(description="also its preset speakers")] = None
) -> dict[str, Any]:
    """The saved voices (and, with `model`, a CustomVoice model's preset speakers)."""
    if model is not None:  # a model the API takes (else 400 naming it); OpenAI's names: the server's own
        model = check_model(model, web.settings) or web.settings.model
    return {"voices": [_voice(row) for row in voices_api.list_voices(web.redis, model)]}


@router.post(
    "/v1/audio/voices",
    status_code=201,
    response_model=VoiceModel,
    responses=documented(400, 401, 403, 408, 409, 413, 415),
    openapi_extra=UPLOAD,
)
async def add_voice(request: Request, web: WebDep) -> JSONResponse:
    """Save a voice sample under `name` (checked and normalized as `narrate voice add` does);
    `consent` must be true. 409 if the name is taken."""
    form = await read_form(request, web.settings.home)
    try:
        row = await run_in_threadpool(_add, web, form)
    except (NarrateError, ApiError) as e:  # the file named as it was sent, never where it was written here
        raise api_error(e, form.plain(message_of(e))) from None
    finally:
        form.remove()
    return JSONResponse(row, status_code=201, headers={"Location": f"/v1/audio/voices/{row['id']}"})


def _add(web: Web, form: Form) -> dict[str, Any]:
    if not form.flag("consent"):
        raise ApiError(
            400,
            "consent must be true: save only a voice you have the right to use (your own, or one whose speaker agreed)",
            "consent",
        )
    name = form.value("name")
    sample = form.file("audio_sample")
    if name is None or sample is None:
        raise ApiError(
            400, "send name and audio_sample (a file: -F audio_sample=@me.wav)", "name" if not name else "audio_sample"
        )
    if voice_library.find(web.redis, check_name(name)) is not None:  # before the sample is read (VoiceExists later)
        raise voice_library.VoiceExists(f"a voice named {name.lower()!r} exists", name.lower())
    description = form.value("description") or form.value("speaker_description")
    voices_api.add(web.settings, web.redis, name, sample.path, description, form.value("ref_text"))
    return _voice(next(r for r in voices_api.list_voices(web.redis) if r["name"] == name.lower()))


@router.delete("/v1/audio/voices/{name}", response_model=VoiceDeleted, responses=documented(401, 403, 404, 409))
def delete_voice(web: WebDep, name: str, force: Annotated[bool, Query()] = False) -> dict[str, Any]:
    """Remove a saved voice; 409 while queued, scheduled or recurring jobs name it, unless `force`
    (they keep their own copy of the sample)."""
    record, users = voices_api.remove(web.redis, web.settings, name, force)  # VoiceInUse: 409
    return {"id": record.name, "object": "voice.deleted", "deleted": True, "kept_by": users}
