"""The Voices page: the saved voices and the default model's preset speakers, each with a preview
(the page's script asks POST /v1/audio/speech); add a sample (with a consent tick), rename, remove
(refused while jobs or schedules name the voice, unless forced), and design a voice from a
description: candidates are made by one clip job, heard on the design's page, and one is kept."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from narrate.jobs.api import voice_actions as voices_api
from narrate.jobs.api.model_choice import DRY_RUN
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.server.records import find
from narrate.jobs.voices import clips
from narrate.jobs.voices.names import check_name
from narrate.jobs.web import flash, views
from narrate.jobs.web.auth import SIGNED_IN
from narrate.jobs.web.errors import ApiError
from narrate.jobs.web.pages import back_to, form_fields
from narrate.jobs.web.state import Web, WebDep
from narrate.jobs.web.templating import render
from narrate.jobs.web.uploads import read_form
from starlette.concurrency import run_in_threadpool

router = APIRouter(include_in_schema=False, dependencies=[SIGNED_IN])
DESIGN_DRY_RUN = f"{DRY_RUN} --kind voice-design"  # a random-weight VoiceDesign checkpoint, made offline


@router.get("/voices")
def voices_page(request: Request, web: WebDep) -> Response:
    models = views.design_models(web.settings)
    context = {
        "voices": voices_api.list_voices(web.redis, web.settings.model),
        "pangram": clips.PANGRAM,
        "name_pattern": views.NAME_PATTERN,
        "name_rule": views.NAME_RULE,
        "design_models": models,
        "design_model": models[0],
        "design_dry_run": DESIGN_DRY_RUN,
        **flash.take(web.redis, request),
    }
    return render(request, "voices.html", context)


@router.post("/voices/add")
async def add(request: Request, web: WebDep) -> RedirectResponse:
    form = await read_form(request, web.settings.home)
    try:
        sample, name = form.file("audio_sample"), form.value("name")
        if not form.flag("consent"):
            raise BadInput("tick the consent box: save only a voice you have the right to use")
        if sample is None or not name:
            raise BadInput("give the voice a name and choose a sample file (1-60 s of one person's speech)")
        record = await run_in_threadpool(
            voices_api.add,
            web.settings,
            web.redis,
            name,
            sample.path,
            form.value("description"),
            form.value("ref_text"),
        )
    except (NarrateError, ApiError) as e:
        return back_to(request, "/voices", error=form.plain(flash.words_of(e)))
    finally:
        form.remove()
    return back_to(request, "/voices", said=f"saved voice {record.name}")


@router.post("/voices/design")
async def design(request: Request, web: WebDep) -> RedirectResponse:
    form = await form_fields(request)
    models = views.design_models(web.settings)
    try:
        count = int(form.get("candidates") or 3)
        model = form.get("model") or models[0]
        if model not in models:
            raise BadInput(
                f"model {model[:100]!r} is not one this server offers for designing: choose one of {', '.join(models)}"
            )
        draft, _job = await run_in_threadpool(
            voices_api.design,
            web.settings,
            web.redis,
            form.get("name", ""),
            form.get("description", ""),
            form.get("text") or None,
            count,
            model,
        )
    except ValueError:
        return back_to(request, "/voices", error="candidates: give a whole number")
    except NarrateError as e:
        return back_to(request, "/voices", error=flash.words_of(e))
    return back_to(
        request,
        f"/voices/designs/{quote(draft.name)}",
        said="designing: the candidates come when a worker has made them",
    )


def _design(web: Web, name: str) -> dict[str, Any]:
    draft = clips.get_draft(web.redis, check_name(name))
    if draft is None:
        raise BadInput(f"no design named {name[:64]!r} waits to be kept (it was kept, or it expired)")
    job = find(web.redis, draft.job_id)
    state = job.get_status(refresh=False).value if job is not None else "gone"
    numbers = voices_api.clip_numbers(web.redis, draft.job_id) if state == "finished" else []
    error = (job.meta or {}).get("error") if job is not None and state == "failed" else None
    if error and DRY_RUN in error and DESIGN_DRY_RUN not in error:  # the random weights of a VoiceDesign model
        error = error.replace(DRY_RUN, DESIGN_DRY_RUN)
    return {"draft": draft, "state": state, "numbers": numbers, "job_error": error}


@router.get("/voices/designs/{name}")
def design_page(request: Request, web: WebDep, name: str) -> Response:
    try:
        context = _design(web, name)
    except NarrateError:  # fixed words: the name in the URL is anyone's text
        return back_to(
            request,
            "/voices",
            error="There is no such design waiting to be kept: it was kept, or it "
            "expired. Design the voice again below.",
        )
    return render(request, "design.html", {**context, **flash.take(web.redis, request)})


@router.get("/voices/designs/{name}/{number}.wav")
def design_clip(web: WebDep, name: str, number: int) -> Response:
    draft = clips.get_draft(web.redis, check_name(name))
    if draft is None or not 1 <= number <= len(draft.seeds):
        raise ApiError(404, f"no candidate {number} of a design {name[:64]!r}")
    return Response(
        clips.get_clip(web.redis, draft.job_id, number), media_type="audio/wav", headers={"Cache-Control": "no-store"}
    )


@router.post("/voices/designs/{name}/keep")
async def keep(request: Request, web: WebDep, name: str) -> RedirectResponse:
    form = await form_fields(request)
    try:
        record = await run_in_threadpool(voices_api.keep, web.settings, web.redis, name, int(form.get("number", "0")))
    except ValueError:
        return back_to(request, f"/voices/designs/{quote(name)}", error="choose a candidate")
    except NarrateError as e:
        return back_to(request, f"/voices/designs/{quote(name)}", error=flash.words_of(e))
    return back_to(request, "/voices", said=f"kept candidate {form.get('number')} as voice {record.name}")


@router.post("/voices/{name}/rename")
async def rename(request: Request, web: WebDep, name: str) -> RedirectResponse:
    form = await form_fields(request)
    try:
        record = await run_in_threadpool(voices_api.rename, web.redis, name, form.get("new_name", ""))
    except NarrateError as e:
        return back_to(request, "/voices", error=flash.words_of(e))
    return back_to(request, "/voices", said=f"renamed {name} to {record.name}")


@router.post("/voices/{name}/remove")
async def remove(request: Request, web: WebDep, name: str) -> RedirectResponse:
    form = await form_fields(request)
    try:
        record, users = await run_in_threadpool(
            voices_api.remove, web.redis, web.settings, name, bool(form.get("force"))
        )
    except NarrateError as e:
        return back_to(request, "/voices", error=flash.words_of(e))
    kept = f" ({len(users)} jobs keep their own copy)" if users else ""
    return back_to(request, "/voices", said=f"removed voice {record.name}{kept}")
