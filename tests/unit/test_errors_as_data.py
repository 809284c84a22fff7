"""Errors and outcomes as data (jobs/errors.py, jobs/queue/cancel.py, jobs/queue/resume.py): each
front end decides by the class, the code or the outcome, never by reading a message. The HTTP API's
status, `code` and `param` come from the error's class (a message reworded, or one that merely says
"exists", changes nothing); each front end words its own message from the facts (the API names
DELETE ?force=true, the pages their tick box, the command line its flag); resume's and cancel's
outcomes are an enum, which the API answers 409 on and the command line prints in its words."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from narrate.jobs.errors import BadInput, Conflict, JobNotFound, NarrateError, NotFound
from narrate.jobs.queue.cancel import WORDS, Cancel, Canceled, JobEnded
from narrate.jobs.queue.resume import Resume, Resumed
from narrate.jobs.voices.voice_library import VoiceExists, VoiceInUse, VoiceNotFound
from narrate.jobs.web import flash
from narrate.jobs.web.errors import ApiError, api_error, code_of, message_of, status_of

JOB = "narrate-0123456789abcdef"


def test_an_error_carries_a_code_a_param_and_facts():
    plain = NarrateError("something")
    assert (plain.code, plain.param, plain.facts, str(plain)) == ("error", None, {}, "something")
    e = VoiceExists("reworded entirely", "bob")
    assert (e.code, e.param, e.facts) == ("voice_exists", "name", {"name": "bob"})
    assert isinstance(e, Conflict) and isinstance(e, BadInput)  # the CLI's `except BadInput` still sees it
    used = VoiceInUse("x", "bob", ["job a", "schedule b"])
    assert used.facts == {"name": "bob", "users": ["job a", "schedule b"]}
    assert JobEnded("x", JOB, "failed").facts == {"job_id": JOB, "state": "failed"}
    assert {JobNotFound("x").code, VoiceNotFound("x").code} == {"job_not_found", "voice_not_found"}
    assert isinstance(VoiceNotFound("x"), NotFound) and isinstance(JobNotFound("x"), NotFound)
    assert str(NarrateError("a\nb\x1b[31m")) == "a\\nb\\x1b[31m"  # still one printable line


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (VoiceExists("words that say nothing of it", "bob"), 409, "voice_exists"),
        (VoiceInUse("no such word here", "bob", ["job a"]), 409, "voice_in_use"),
        (JobEnded("whatever the command line says", JOB, "finished"), 409, "job_ended"),
        (Conflict("anything"), 409, "conflict"),
        (BadInput("a voice named bob exists"), 400, "bad_input"),  # says "exists": still a 400
        (BadInput("left alone (finished)"), 400, "bad_input"),
        (JobNotFound("no job"), 404, "job_not_found"),
        (VoiceNotFound("exists? no"), 404, "voice_not_found"),
        (NarrateError("the sample is damaged"), 500, "error"),
    ],
)
def test_the_api_status_is_the_errors_class_never_its_words(error, status, code):
    assert status_of(error) == status and code_of(error) == code
    answered = api_error(error)
    assert (answered.status, answered.code, answered.param) == (status, code, error.param)


def _raising(error: BaseException) -> dict[str, Any]:
    """The JSON body and status the API's error handlers answer `error` with (a route raising it)."""
    from fastapi import FastAPI
    from narrate.jobs.web import errors

    app = FastAPI()
    errors.install(app)

    @app.get("/boom")
    def boom() -> None:
        raise error

    got: dict[str, Any] = {"body": b""}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            got["status"] = message["status"]
        elif message["type"] == "http.response.body":
            got["body"] += message.get("body", b"")

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/boom",
        "raw_path": b"/boom",
        "query_string": b"",
        "root_path": "",
        "headers": [],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }
    asyncio.run(app(scope, receive, send))
    return {"status": got["status"], **json.loads(got["body"])["error"]}


def test_the_api_body_has_the_code_and_the_param_and_its_own_words():
    said = _raising(VoiceExists("reworded: nothing about names", "bob"))
    assert (said["status"], said["code"], said["param"], said["type"]) == (
        409,
        "voice_exists",
        "name",
        "conflict_error",
    )
    assert said["message"] == "a voice named 'bob' exists; DELETE it first or choose another name"
    said = _raising(VoiceInUse("`narrate voice remove bob --force` removes it anyway", "bob", ["job a", "job b"]))
    assert said["status"] == 409 and "?force=true" in said["message"] and "--force" not in said["message"]
    assert "job a; job b" in said["message"]
    said = _raising(JobEnded("job x already finished (narrate status x)", JOB, "finished"))
    assert said["status"] == 409 and said["message"] == f"narration {JOB} is completed; there is nothing to cancel"
    said = _raising(BadInput("a voice named bob exists"))
    assert (said["status"], said["code"]) == (400, "bad_input")
    said = _raising(ApiError(400, "speed 2.0: only 1.0", "speed"))
    assert (said["status"], said["param"], said["code"]) == (400, "speed", None)


def test_the_pages_word_their_own_flash():
    used = VoiceInUse("the command line's words", "bob", [f"job {i}" for i in range(7)])
    said = flash.words_of(used)
    assert "tick 'remove anyway'" in said and "--force" not in said and "?force" not in said
    assert "job 4; and 2 more" in said  # the first five, then a count
    assert "DELETE" not in flash.words_of(VoiceExists("x", "bob")) and "'bob'" in flash.words_of(
        VoiceExists("x", "bob")
    )
    assert (
        flash.words_of(JobEnded("x", JOB, "failed")) == f"{JOB} already failed: there is nothing to cancel "
        "(resume runs it again)"
    )
    assert flash.words_of(BadInput("as it is")) == "as it is" == message_of(BadInput("as it is"))


def test_cancel_and_resume_outcomes_are_an_enum_with_the_command_lines_words():
    assert str(Canceled(JOB, Cancel.ALREADY_CANCELED)) == "already canceled"
    assert str(Canceled(JOB, Cancel.STOPPING, parts=3, parts_stopped=2)) == (
        f"{WORDS[Cancel.STOPPING]}; 2 of its 3 parts canceled or stopping"
    )
    words = {
        Resumed(JOB, Resume.REQUEUED): "requeued",
        Resumed(JOB, Resume.REQUEUED_GONE): "requeued (its worker is gone)",
        Resumed(JOB, Resume.BOOK_STITCHES, parts=4): "requeued (all 4 parts are done: it stitches now)",
        Resumed(
            JOB, Resume.BOOK_WAITS, parts=4, parts_requeued=1, parts_waiting=2
        ): "requeued 1 part; the book waits for 2 of 4 parts",
        Resumed(JOB, Resume.KEPT_CANCELED): "canceled (it was canceled and its worker is gone)",
        Resumed(JOB, Resume.LEFT_CANCELED): f"left alone (canceled: `narrate resume {JOB}` runs it again)",
        Resumed(JOB, Resume.LEFT_RACED): "left alone (requeued or started again meanwhile)",
        Resumed(JOB, Resume.LEFT_RUNNING, why="it beat 2 s ago"): "left alone (started: it beat 2 s ago)",
        Resumed(JOB, Resume.LEFT_ENDED, state="finished"): "left alone (finished)",
    }
    for did, said in words.items():
        assert str(did) == said
        assert did.outcome.left_alone is said.startswith("left alone")
    assert {r.outcome for r in words} == set(Resume)


# The real app, its routes deciding by class and outcome (the API called as ASGI, the tests' Redis).


@pytest.fixture
def served(env, home, external_redis):
    from narrate.jobs.settings import Settings
    from narrate.jobs.web import uploads
    from narrate.jobs.web.app import make_app
    from narrate.jobs.web.state import Web

    app = make_app(Web(Settings.from_env(), external_redis), "127.0.0.1", 8000)
    yield app
    uploads.owner_of(home).release()


def _call(app, method: str, path: str) -> tuple[int, dict[str, Any]]:
    got: dict[str, Any] = {"body": b""}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            got["status"] = message["status"]
        elif message["type"] == "http.response.body":
            got["body"] += message.get("body", b"")

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8000")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
    }
    asyncio.run(app(scope, receive, send))
    return got["status"], json.loads(got["body"] or b"{}")


def test_the_routes_answer_by_class_and_outcome(served, monkeypatch):
    from narrate.jobs.web import narrations, voice_routes

    def in_use(*_args: Any) -> None:
        raise VoiceInUse("reworded: no hint of a conflict", "bob", ["job a"])

    monkeypatch.setattr(voice_routes.voices_api, "remove", in_use)
    status, said = _call(served, "DELETE", "/v1/audio/voices/bob")
    assert (status, said["error"]["code"], said["error"]["param"]) == (409, "voice_in_use", "name")

    def ended(*_args: Any) -> None:
        raise JobEnded("reworded", JOB, "failed")

    monkeypatch.setattr(narrations, "cancel_job", ended)
    status, said = _call(served, "POST", f"/v1/narrations/{JOB}/cancel")
    assert (status, said["error"]["code"]) == (409, "job_ended") and "resume" in said["error"]["message"]

    for outcome, facts in (
        (Resume.LEFT_RUNNING, {"why": "its worker beats"}),
        (Resume.LEFT_ENDED, {"state": "queued"}),
        (Resume.LEFT_RACED, {}),
    ):
        monkeypatch.setattr(narrations.submit_api, "resume", lambda *_a, o=outcome, f=facts: [Resumed(JOB, o, **f)])
        status, said = _call(served, "POST", f"/v1/narrations/{JOB}/resume")
        assert (status, said["error"]["code"]) == (409, outcome.value), said
        assert said["error"]["message"].endswith("nothing to resume")
