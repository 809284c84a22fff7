"""Every error of the HTTP API as OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``,
with the status code that fits: a message a person can act on, never a traceback or a server path.
The status comes from the error's class (jobs/errors.py: a Conflict is 409 whatever its message
says), `code` and `param` from the error; the API words its own message where the command line's
would name a flag or a command (a voice in use: DELETE with ?force=true)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import redis
from narrate.jobs.api.unfinished import NotFinished
from narrate.jobs.errors import BadInput, Conflict, NarrateError, NotFound, ServerUnavailable
from narrate.jobs.queue.cancel import JobEnded
from narrate.jobs.queue.states import State
from narrate.jobs.server.durability import NotDurable
from narrate.jobs.voices.voice_library import VoiceExists, VoiceInUse

if TYPE_CHECKING:
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

log = logging.getLogger("narrate.serve")

TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "request_too_large",
    415: "unsupported_media_type",
    416: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",  # OpenAI's type for 429 (its SDK raises RateLimitError)
    500: "server_error",
    502: "server_error",
    503: "service_unavailable",
    504: "timeout_error",
    507: "insufficient_storage",
}


class ApiError(Exception):
    """An error the API answers as it is: its status, message, the parameter it is about and its code."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        headers: dict[str, str] | None = None,
        code: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.headers = headers or {}
        self.code = code


def body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": TYPES.get(status, "server_error"), "param": param, "code": code}}


# An error's class -> its status, the first that matches (a Conflict is a BadInput too).
STATUSES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], int], ...] = (
    (NotFound, 404),
    (Conflict, 409),
    (BadInput, 400),
    (NotDurable, 507),
    ((ServerUnavailable, redis.RedisError), 503),
)


def status_of(e: BaseException) -> int:
    """The status code of an exception narrate raises (what the CLI prints as one line), by its class."""
    if isinstance(e, ApiError):
        return e.status
    return next((status for kind, status in STATUSES if isinstance(e, kind)), 500)


def code_of(e: BaseException) -> str | None:
    """The error's code (jobs/errors.py), the API body's `code`."""
    return e.code if isinstance(e, ApiError | NarrateError) else None


def param_of(e: BaseException) -> str | None:
    return e.param if isinstance(e, ApiError | NarrateError) else None


def message_of(e: BaseException) -> str:
    if isinstance(e, ApiError):
        return e.message
    if isinstance(e, redis.RedisError):
        return f"the Redis server refused or did not answer: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
    if isinstance(e, VoiceInUse):
        return in_use(e, "DELETE with ?force=true removes it anyway")
    if isinstance(e, VoiceExists):
        return f"a voice named {e.facts['name']!r} exists; DELETE it first or choose another name"
    if isinstance(e, JobEnded):
        job_id = e.facts["job_id"]
        if e.facts["state"] == "failed":
            return f"narration {job_id} failed; there is nothing to cancel (POST .../resume runs it again)"
        return f"narration {job_id} is completed; there is nothing to cancel"
    if isinstance(e, NotFinished):
        return not_finished(e)
    if isinstance(e, NarrateError):
        return str(e)
    return "the server failed; see its log (narrate serve) for the reason"


def in_use(e: VoiceInUse, then: str) -> str:
    """A voice in use, in the web's words: who names it, and `then` (what removes it anyway)."""
    from narrate.jobs.api.voice_actions import users_shown

    name, users = e.facts["name"], e.facts["users"]
    return f"voice {name!r} is still named by {users_shown(users)}; they keep their copy of the sample, so {then}"


def not_finished(e: NotFinished) -> str:
    """A narration that has not completed, in the web's words (the command line's names its commands)."""

    job_id, state, doing = e.facts["job_id"], State.of(e.facts["state"]).api, e.facts["doing"]
    then = "resume it; " if state in ("failed", "cancelled") else ""
    return f"narration {job_id} is {state.replace('_', ' ')}: {then}{doing} it once it has completed"


def api_error(e: BaseException, message: str | None = None) -> ApiError:
    """`e` as the API answers it (status, code, param, headers), with `message` instead of its own."""
    said = message_of(e) if message is None else message
    return ApiError(status_of(e), said, param_of(e), getattr(e, "headers", None), code_of(e))


def response(
    status: int, message: str, param: str | None = None, headers: dict[str, str] | None = None, code: str | None = None
) -> JSONResponse:
    from fastapi.responses import JSONResponse

    return JSONResponse(body(status, message, param, code), status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    """Exception handlers: narrate's errors, FastAPI's validation errors and HTTP errors, anything else."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import Response
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect

    async def narrate_error(_request: Request, e: Exception) -> JSONResponse:
        status = status_of(e)
        if status >= 500 and not isinstance(e, ApiError):
            log.warning("request failed: %s", message_of(e))
        return response(status, message_of(e), param_of(e), getattr(e, "headers", None), code_of(e))

    async def invalid(_request: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, RequestValidationError)
        first = e.errors()[0] if e.errors() else {}
        if first.get("type") == "json_invalid":
            return response(422, "the body is not valid JSON; send a JSON object (Content-Type: application/json)")
        where = [p for p in first.get("loc", ()) if isinstance(p, str) and p not in ("body", "query", "path")]
        param = ".".join(where) or None
        said = first.get("msg", "invalid request")
        return response(422, f"{param + ': ' if param else ''}{said}", param)

    async def http_error(_request: Request, e: Exception) -> JSONResponse:
        assert isinstance(e, HTTPException)
        said = {404: "no such endpoint; see /docs", 405: "method not allowed here; see /docs"}
        message = e.detail if isinstance(e.detail, str) and e.status_code not in said else said.get(e.status_code, "")
        return response(e.status_code, message or str(e.detail), headers=dict(e.headers or {}))

    async def unexpected(_request: Request, e: Exception) -> JSONResponse:
        log.exception("request failed")
        return response(500, message_of(e))

    async def client_left(request: Request, _e: Exception) -> Response:
        """A client that goes away before its request is read is not an error: one line, and no answer (nobody
        is there to read it)."""
        log.info("%s %s: the client left before sending its whole request", request.method, request.url.path)
        return Response(status_code=400)

    app.add_exception_handler(NarrateError, narrate_error)
    app.add_exception_handler(ApiError, narrate_error)
    app.add_exception_handler(redis.RedisError, narrate_error)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(ClientDisconnect, client_left)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)


ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}


def documented(*codes: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` of a route: each error code with the error body's schema."""
    said = {
        400: "bad input",
        401: "no or wrong API key",
        403: "refused (Host/Origin)",
        404: "not found",
        409: "conflict",
        413: "too large",
        415: "not multipart/form-data",
        416: "range not satisfiable",
        422: "malformed request",
        503: "no server or worker",
        504: "timed out",
    }
    return {
        c: {"description": said.get(c, "error"), "content": {"application/json": {"schema": ERROR_SCHEMA}}}
        for c in codes
    }
