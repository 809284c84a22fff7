"""`/v1/narrations`: documents narrated by the queue, as `narrate submit` does it (the same checks,
all before anything is enqueued; the same content-derived job id, so a repeated POST is the same
narration), then status, events, cancel, resume, files and delete."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import redis
from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from narrate.jobs.api import chapter_previews
from narrate.jobs.api import submit as submit_api
from narrate.jobs.api.jobview import JobView
from narrate.jobs.errors import JobNotFound, NarrateError
from narrate.jobs.queue.cancel import cancel as cancel_job
from narrate.jobs.queue.resume import Resume, Resumed
from narrate.jobs.queue.states import ENDED_API, ApiWord, State
from narrate.jobs.server.store import PREFIX
from narrate.jobs.web import callbacks, submitting, views
from narrate.jobs.web.auth import SIGNED_IN
from narrate.jobs.web.epub_audio import epub_audio
from narrate.jobs.web.errors import ApiError, api_error, documented, message_of
from narrate.jobs.web.limits import Limits, client_of
from narrate.jobs.web.outputs import AUDIO
from narrate.jobs.web.schemas import Deleted, Narration, NarrationList, sse
from narrate.jobs.web.state import Web, WebDep
from narrate.jobs.web.uploads import read_form
from starlette.concurrency import run_in_threadpool

router = APIRouter(tags=["narrations"], dependencies=[SIGNED_IN])
EVENT_POLL_S = 0.5
KEEPALIVE_S = 15.0
RECONNECT_MS = 1000  # the retry hint at the end of a stream's stretch
DELETE_CLAIM_S = 300  # the one request deleting a narration holds it this long at most (a crash lets go)
MEDIA = {
    ".mp3": "audio/mpeg",
    ".m4b": "audio/mp4",
    ".m4a": "audio/mp4",
    ".flac": "audio/flac",
    ".ogg": "audio/ogg",
    ".opus": "audio/ogg",
    ".wav": "audio/wav",
    ".srt": "application/x-subrip",
    ".vtt": "text/vtt",
    ".json": "application/json",
}


@router.post(
    "/v1/narrations",
    status_code=202,
    response_model=Narration | NarrationList,
    responses=documented(400, 401, 403, 408, 409, 413, 415, 503),
    openapi_extra=submitting.FORM,
)
async def create(request: Request, web: WebDep) -> JSONResponse:
    """Narrate one or more documents (`file`, repeated) or a `text`, in `voice` or an uploaded
    `voice_sample`: 202 and the narration (or a list, for several documents), `Location` its URL.
    The same request again returns the same narration (`duplicate` says what it was)."""
    form = await read_form(request, web.settings.home)
    try:
        made = await run_in_threadpool(submitting.submit, web, form)
    except (NarrateError, ApiError) as e:  # uploads named as they were sent, never where they were written
        raise api_error(e, form.plain(message_of(e))) from None
    finally:
        form.remove()
    if len(made) == 1:
        return JSONResponse(made[0], status_code=202, headers={"Location": f"/v1/narrations/{made[0]['id']}"})
    return JSONResponse({"object": "list", "data": made}, status_code=202)


@router.get("/v1/narrations", response_model=NarrationList, responses=documented(401, 403, 422))
def list_narrations(
    web: WebDep,
    status: Annotated[ApiWord | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="Narrations a page (newest first)")] = 100,
    after: Annotated[str | None, Query(max_length=200, description="The last id of the page before")] = None,
) -> dict[str, Any]:
    """The narrations of the server's queues, newest first, a page at a time (`status` keeps one
    state; `has_more` and `last_id`: pass it as `after` for the next page)."""
    data, more = views.listed_page(web.redis, web.settings, (status,) if status else None, limit, after)
    first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
    return {"object": "list", "data": data, "has_more": more, "first_id": first, "last_id": last}


@router.get("/v1/narrations/{narration_id}", response_model=Narration, responses=documented(401, 403, 404))
def get_narration(web: WebDep, narration_id: str) -> dict[str, Any]:
    """Status, progress, outputs (with their URLs) and error of one narration."""
    return views.narration(web.redis, web.settings, narration_id)


@router.get(
    "/v1/narrations/{narration_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": sse(["narration"])},
            "description": "`narration` events, the last at a terminal state",
        },
        **documented(401, 403, 404),
    },
)
async def events(request: Request, web: WebDep, narration_id: str) -> StreamingResponse:
    """Server-sent events: the narration object each time it changes, until it ends. One stream lasts
    at most NARRATE_SERVE_STREAM_S: it then ends with a `retry` hint, and the client reconnects for
    the next stretch (EventSource does so by itself); one address holds at most
    NARRATE_SERVE_CLIENT_STREAMS at once (429)."""
    first = await run_in_threadpool(views.narration, web.redis, web.settings, narration_id)
    limits: Limits = request.app.state.limits
    release = limits.streams.take(client_of(request.scope.get("client")), "event streams")  # 429 before it starts

    async def stream() -> AsyncIterator[bytes]:
        last, said, quiet = None, first, time.monotonic()
        ends = time.monotonic() + web.settings.serve_stream_s
        while True:
            if said != last:
                yield f"event: narration\ndata: {json.dumps(said)}\n\n".encode()
                last, quiet = said, time.monotonic()
                if said["status"] in ENDED_API:
                    return
            elif time.monotonic() - quiet > KEEPALIVE_S:
                yield b": keep-alive\n\n"
                quiet = time.monotonic()
            if time.monotonic() >= ends:  # long enough: the client comes back for the next stretch
                yield f"retry: {RECONNECT_MS}\n: reconnect for more\n\n".encode()
                return
            await asyncio.sleep(EVENT_POLL_S)
            try:
                said = await run_in_threadpool(views.narration, web.redis, web.settings, narration_id)
            except (JobNotFound, redis.RedisError):  # deleted meanwhile, or the server went away: the end
                return

    return Held(stream(), release, media_type="text/event-stream", headers={"Cache-Control": "no-store"})


class Held(StreamingResponse):
    """A streamed response that lets go of what it holds when it ends, however it ends."""

    def __init__(self, content: AsyncIterator[bytes], release: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.release = release

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.release()


@router.post("/v1/narrations/{narration_id}/cancel", response_model=Narration, responses=documented(401, 403, 404, 409))
def cancel(web: WebDep, narration_id: str) -> dict[str, Any]:
    """Cancel: a queued or scheduled narration is taken out; a running one stops within a second
    (its finished sentences are kept: resume continues it). 409 if it already ended."""
    did = cancel_job(web.redis, views.check_id(narration_id), "narrate serve")  # JobEnded: 409
    return {**views.narration(web.redis, web.settings, narration_id), "action": str(did), "outcome": did.outcome.value}


@router.post("/v1/narrations/{narration_id}/resume", response_model=Narration, responses=documented(401, 403, 404, 409))
def resume(web: WebDep, narration_id: str) -> dict[str, Any]:
    """Requeue a failed or cancelled narration (or one whose worker is gone); it continues from its
    checkpoints. 409 if there is nothing to resume."""
    [did] = submit_api.resume(web.redis, [views.check_id(narration_id)], web.settings.queue)
    if did.outcome.left_alone:
        raise ApiError(409, f"narration {narration_id} {left_alone(did)}: nothing to resume", code=did.outcome.value)
    return {**views.narration(web.redis, web.settings, narration_id), "action": str(did), "outcome": did.outcome.value}


def left_alone(did: Resumed) -> str:
    """Why resume left a narration alone, in the API's words."""
    if did.outcome is Resume.LEFT_RUNNING:
        return f"is in progress ({did.why})"
    if did.outcome is Resume.LEFT_RACED:
        return "was requeued or started again meanwhile"
    if did.outcome is Resume.LEFT_ENDED:
        return f"is {State.of(did.state).api}"
    return "is cancelled"


@router.get(
    "/v1/narrations/{narration_id}/files/{name:path}",
    response_class=FileResponse,
    responses={
        200: {
            "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
            "description": "the file (HTTP Range: 206)",
        },
        206: {"description": "part of the file (Range)"},
        **documented(401, 403, 404, 416),
    },
)
def file(web: WebDep, narration_id: str, name: str) -> FileResponse:
    """One file the narration wrote (its `outputs`): the book, subtitles, chapter files; HTTP Range
    requests get 206."""
    found = views.files_of(web.redis, web.settings, narration_id)
    for out in found:
        if out.name == name:
            return FileResponse(
                out.path,
                filename=views.file_download_name(web.redis, narration_id, out.name),
                media_type=_media(out.path.suffix),
            )
    listed = ", ".join(f.name for f in found) or "none yet: it has not finished"
    raise ApiError(404, f"narration {narration_id} wrote no file {name[:100]!r} here (its files: {listed})")


@router.get(
    "/v1/narrations/{narration_id}/audio",
    response_class=FileResponse,
    responses={
        200: {
            "content": {"audio/mp4": {"schema": {"type": "string", "format": "binary"}}},
            "description": "the book's audio (HTTP Range: 206)",
        },
        206: {"description": "part of it (Range)"},
        **documented(401, 403, 404, 416),
    },
)
def book_audio(web: WebDep, narration_id: str) -> FileResponse:
    """The book's audio, for a player: its audio file, or the audio inside its EPUB (`format=epub`)."""
    found = views.files_of(web.redis, web.settings, narration_id)
    for out in found:
        if out.path.suffix.lower() in AUDIO:
            return FileResponse(out.path, media_type=_media(out.path.suffix))
    for out in found:
        if out.path.suffix.lower() == ".epub" and (inside := epub_audio(out.path, web.settings.home)) is not None:
            return FileResponse(inside, media_type=_media(inside.suffix))
    raise ApiError(404, f"narration {narration_id} has no audio here (yet: it has not finished, or its files are gone)")


@router.get(
    "/v1/narrations/{narration_id}/chapters/{number}/audio",
    response_class=FileResponse,
    responses={
        200: {
            "content": {"audio/aac": {"schema": {"type": "string", "format": "binary"}}},
            "description": "the chapter's audio (HTTP Range: 206)",
        },
        206: {"description": "part of it (Range)"},
        **documented(401, 403, 404, 416),
    },
)
def chapter_audio(web: WebDep, narration_id: str, number: int) -> FileResponse:
    """A chapter of a narration still being read, once its audio is encoded (m4a and m4b books: the
    chapters' `audio_url` in `progress`); gone once the book is finished (its own files replace it)."""
    views.check_id(narration_id)
    path = chapter_previews.chapter_file(web.redis, web.settings, narration_id, number)
    if path is None:
        raise ApiError(
            404,
            f"chapter {number} of narration {narration_id} cannot be played yet (or any more: a "
            "finished book has its own files, see outputs)",
        )
    return FileResponse(path, filename=f"chapter-{number:03d}.aac", media_type="audio/aac")


def _media(suffix: str) -> str:
    return MEDIA.get(suffix.lower(), "application/octet-stream")


@router.delete("/v1/narrations/{narration_id}", response_model=Deleted, responses=documented(401, 403, 404, 409))
def delete(web: WebDep, narration_id: str) -> dict[str, Any]:
    """Remove an ended narration: its files (those still as it wrote them) and its record. 409 while
    it is queued, scheduled or running (cancel it first)."""
    return delete_narration(web, narration_id)


def delete_narration(web: Web, narration_id: str) -> dict[str, Any]:
    """Remove an ended narration's files (those still as it wrote them), parts and record. Only one
    request deletes it: another one meanwhile, and any after, get 404."""
    st, files = views.narration_and_files(web.redis, web.settings, narration_id)
    if st["status"] not in ENDED_API:
        raise ApiError(409, f"narration {narration_id} is {st['status']}; cancel it first (POST .../cancel)")
    claim = f"{PREFIX}deleting:{narration_id}"
    if not web.redis.set(claim, "1", nx=True, ex=DELETE_CLAIM_S):
        raise JobNotFound(f"no narration {narration_id} (it is being deleted)")
    try:
        return _delete(web, narration_id, [f.name for f in files])
    finally:
        web.redis.delete(claim)


def _delete(web: Web, narration_id: str, listed: list[str]) -> dict[str, Any]:
    removed = JobView(web.redis, web.settings).delete(narration_id)  # JobNotFound (404): deleted just before
    callbacks.forget(web.redis, narration_id)
    return {"id": narration_id, "object": "narration.deleted", "deleted": True, "files": removed}
