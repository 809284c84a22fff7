"""The routes of OpenAI's speech endpoint (`POST /v1/audio/speech`) and model list (`GET /v1/models`),
on narrate's workers (the clip jobs: jobs/web/speech_clips.py; the model and voice a request names:
jobs/web/choices.py): the request is checked before anything is enqueued, the first clip is
waited for before the answer starts (so a failure still gets its status code), the rest is streamed
as it is spoken; a client that goes away (before the first audio too) cancels the clip jobs not yet
done."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import shutil
import time
from collections.abc import AsyncIterator

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from narrate.jobs.web import speech_clips as clips
from narrate.jobs.web.auth import SIGNED_IN
from narrate.jobs.web.choices import offered_models
from narrate.jobs.web.errors import ApiError, documented
from narrate.jobs.web.schemas import Model, ModelList, SpeechRequest, sse
from narrate.jobs.web.state import Web, WebDep
from narrate.jobs.web.uploads import private_folder
from starlette.concurrency import run_in_threadpool

router = APIRouter(tags=["speech"], dependencies=[SIGNED_IN])
log = logging.getLogger("narrate.serve")
STARTED = int(time.time())


@router.get("/v1/models", response_model=ModelList, responses=documented(401, 403))
def models(web: WebDep) -> ModelList:
    """The model names `model` takes: OpenAI's (the workers' default model), the workers' default and
    narrate's defaults of each kind; any published Qwen3-TTS id is taken too."""
    names = offered_models(web.settings)
    return ModelList(data=[Model(id=n, created=STARTED, owned_by="narrate") for n in names])


BINARY = {"schema": {"type": "string", "format": "binary"}}
AUDIO = {
    "content": {
        **{m: BINARY for m in dict.fromkeys(clips.MEDIA.values())},
        "text/event-stream": sse(["speech.audio.delta", "speech.audio.done", "error"]),
    },
    "description": "the audio, streamed as it is spoken",
}


@router.post(
    "/v1/audio/speech",
    response_class=StreamingResponse,
    responses={200: AUDIO, **documented(400, 401, 403, 408, 413, 422, 502, 503, 504)},
)
async def speech(request: Request, web: WebDep, body: SpeechRequest) -> StreamingResponse:
    """Speak `input` (at most 4,096 characters) in `voice`; `stream_format` sse sends
    `speech.audio.delta` events (base64 audio) and a last `speech.audio.done`."""
    folder = private_folder(web.settings.home)  # a sample sent as a data: URL is read from here
    try:
        said = await run_in_threadpool(clips.prepare, web.redis, web.settings, body.model_dump(), folder)
        job_ids = await run_in_threadpool(clips.enqueue, web.redis, web.settings, said)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    streamed = clips.Streamed()
    rest = clips.clip_audio(web, job_ids[0], time.monotonic() + clips.WAIT_S, streamed)
    try:
        first = await _first(rest, request)  # the first audio, or the status code of what went wrong
    except BaseException:
        await rest.aclose()
        await run_in_threadpool(clips.let_go, web.redis, job_ids, True)
        raise
    single = len(job_ids) == 1 and not streamed.pieces  # the whole answer in one block
    audio = clips.encoded(
        clips.pcm_stream(web, job_ids, first, rest, streamed), body.response_format, web.settings, single=single
    )
    if body.stream_format == "sse":
        return StreamingResponse(
            _events(audio, web, job_ids, len(body.input)),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store"},
        )
    return StreamingResponse(
        _guarded(audio, web, job_ids),
        media_type=clips.MEDIA[body.response_format],
        headers={"Cache-Control": "no-store"},
    )


async def _first(rest: AsyncIterator[bytes], request: Request) -> bytes:
    """The first block of `rest`; ApiError 499 when the client goes away first (the answer has not
    begun, so nothing else listens for it yet)."""
    first = asyncio.ensure_future(anext(rest))
    gone = asyncio.ensure_future(_gone(request))
    try:
        await asyncio.wait({first, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not first.done():
            first.cancel()
            with contextlib.suppress(BaseException):  # its own end (cancelled): the client is gone
                await first
    if first.cancelled():
        raise ApiError(499, "the client went away before the first audio")
    return first.result()


async def _gone(request: Request) -> None:
    """Returns when the client has gone away (its request's body was read already: what comes next
    is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        await asyncio.sleep(0.1)  # more of a body that was read whole: never a busy loop


async def _guarded(
    audio: AsyncIterator[bytes], web: Web, job_ids: list[str], tell: bool = False
) -> AsyncIterator[bytes]:
    """The audio; when a later clip fails, the answer (already begun) just ends (`tell`: raises it
    for the events to say); the request lets its clips go when it ends (those no other request waits
    for are cancelled if it ended early)."""
    done = False
    try:
        async for block in audio:
            yield block
        done = True
    except Exception as e:  # noqa: BLE001 - a status code was sent already: the log says why it ended
        log.warning("speech ended early: %s", e.message if isinstance(e, ApiError) else repr(e))
        if tell:
            raise
    finally:
        with anyio.CancelScope(shield=True):  # gone: the answer's task is cancelled, so shielded or not run
            await run_in_threadpool(clips.let_go, web.redis, job_ids, not done)


async def _events(audio: AsyncIterator[bytes], web: Web, job_ids: list[str], chars: int) -> AsyncIterator[bytes]:
    sent = 0
    try:
        async for block in _guarded(audio, web, job_ids, tell=True):
            sent += len(block)
            event = {"type": "speech.audio.delta", "audio": base64.b64encode(block).decode()}
            yield f"event: speech.audio.delta\ndata: {json.dumps(event)}\n\n".encode()
    except Exception as e:  # noqa: BLE001 - said as the last event
        said = e.message if isinstance(e, ApiError) else "the audio could not be encoded; see the server's log"
        error = {"type": "error", "error": {"message": said, "type": "server_error"}}
        yield f"event: error\ndata: {json.dumps(error)}\n\n".encode()
        return
    usage = {"input_tokens": chars, "output_tokens": sent, "total_tokens": chars + sent}
    done = {"type": "speech.audio.done", "usage": usage}
    yield f"event: speech.audio.done\ndata: {json.dumps(done)}\n\n".encode()
