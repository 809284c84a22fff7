"""`narrate serve`'s smaller hardening rules, in this process: the real app (jobs/web/app.py) called
as ASGI against the tests' Redis, no network. A voice upload's error names the file as it was sent,
never the upload folder; a second server on a home leaves the first one's uploads alone and removes
only what no live server owns; a narration keeps the callback URL it was first given (another one
is 409) and an ended one is never posted to a URL given afterwards; a narration is deleted once
(404 after, and for a request racing the first); the API takes only the models it offers or
published Qwen3-TTS ids, never a path; bidi controls reach no page and no download name; a
single-valued field given twice is a 400 naming it, with nothing left under uploads/; odd ids are
404, websockets refused, and a query string's text never shown."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from narrate.jobs.errors import JobNotFound
from narrate.jobs.settings import Settings
from narrate.jobs.web import callbacks, choices, narrations, uploads, views
from narrate.jobs.web.app import make_app
from narrate.jobs.web.errors import ApiError
from narrate.jobs.web.guard import BodyRules, Guard, served_hosts
from narrate.jobs.web.state import Web
from narrate.jobs.xmltext import without_bidi
from urllib3 import encode_multipart_formdata

BIDI = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
HOOK = "http://127.0.0.1:9"  # a listed callback host nobody listens on


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)

    def error(self, status: int, param: str | None = None) -> str:
        """The error's message, once its status (and its param) are the ones expected."""
        assert self.status == status, (self.status, self.text)
        said = self.json()["error"]
        assert param is None or said["param"] == param, said
        return said["message"]


class Client:
    """The app of `web` called in this process, as a browser or a script on loopback would."""

    def __init__(self, web: Web) -> None:
        self.web = web
        self.app = make_app(web, "127.0.0.1", 8000)

    def call(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None, query: str = ""
    ) -> Answer:
        got: dict[str, Any] = {"status": None, "headers": {}, "body": b""}
        pending = [body]

        async def receive() -> dict[str, Any]:
            if pending:
                return {"type": "http.request", "body": pending.pop(), "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                got["status"] = message["status"]
                got["headers"] = {k.decode().lower(): v.decode("latin-1") for k, v in message.get("headers", [])}
            elif message["type"] == "http.response.body":
                got["body"] += message.get("body", b"")

        sent = [(b"host", b"127.0.0.1:8000")] + [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": quote(path).encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": sent,
            "client": ("127.0.0.1", 40000),
            "server": ("127.0.0.1", 8000),
        }

        async def run() -> None:
            try:
                await self.app(scope, receive, send)
            except Exception:  # Starlette re-raises after it answered 500: the answer is what counts
                if got["status"] is None:
                    raise

        asyncio.run(run())
        return Answer(got["status"], got["headers"], got["body"])

    def form(self, path: str, fields: list[tuple[str, Any]], headers: dict[str, str] | None = None) -> Answer:
        body, kind = encode_multipart_formdata(fields)
        return self.call("POST", path, body, {"content-type": kind, **(headers or {})})

    def narrate(self, text: str, **fields: str) -> Answer:
        return self.form("/v1/narrations", [("text", text), ("voice", "alice"), *fields.items()])

    def page(self, path: str, answer: Answer | None = None, query: str = "") -> str:
        """A page, with the flash cookie `answer` (a form's redirect) set, as a browser sends it."""
        cookie = (answer.headers.get("set-cookie") or "").split(";")[0] if answer is not None else ""
        got = self.call("GET", path, headers={"cookie": cookie} if cookie else None, query=query)
        assert got.status == 200, (path, got.status, got.text[:300])
        return got.text


@pytest.fixture
def web(env, home, external_redis, monkeypatch) -> Web:
    monkeypatch.setenv("NARRATE_CALLBACK_HOSTS", "127.0.0.1:9")
    yield Web(Settings.from_env(), external_redis)
    uploads.owner_of(home).release()


@pytest.fixture
def client(web, voice_wav) -> Client:
    c = Client(web)
    sample = ("alice.wav", voice_wav.read_bytes(), "audio/wav")
    saved = c.form("/v1/audio/voices", [("name", "alice"), ("consent", "true"), ("audio_sample", sample)])
    assert saved.status == 201, saved.text
    return c


def left_under_uploads(home: Path) -> list[Path]:
    root = home / "uploads"
    return sorted(p for p in root.rglob("*")) if root.exists() else []


# 1. A voice upload's error names the file as the client sent it.


def test_a_voice_upload_error_names_the_file_as_sent_never_the_upload_folder(client, home):
    not_audio = ("my voice.wav", b"this is not audio at all " * 40, "audio/wav")
    said = client.form("/v1/audio/voices", [("name", "bob"), ("consent", "true"), ("audio_sample", not_audio)])
    message = said.error(400)
    assert "my voice.wav" in message and str(home) not in message and "uploads" not in message, message
    # The Voices page's add form says it once on the page it leads to, the same way.
    answer = client.form("/voices/add", [("name", "bob"), ("consent", "true"), ("audio_sample", not_audio)])
    assert answer.status == 303, answer.text
    shown = client.page("/voices", answer)
    assert "my voice.wav" in shown and str(home) not in shown and "/uploads/" not in shown
    assert left_under_uploads(home) == []


# 2. A second server on the same home leaves the first one's uploads alone.

HOLDER = """
import sys, time
from narrate.jobs.web.uploads import owner_of
folder = owner_of(sys.argv[1]).folder()
(folder / "1").mkdir()
(folder / "1" / "book.txt").write_text("in flight")
print(folder, flush=True)
time.sleep(600)
"""


def another_server(home: Path) -> tuple[subprocess.Popen, Path]:
    """Another process holding an upload folder of `home` as a server does (killed: a killed server)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(home)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


@contextlib.contextmanager
def serving(client: Client) -> Iterator[None]:
    """The app's lifespan, as uvicorn drives it: started on entry, shut down on exit."""
    started, stop, failed = threading.Event(), threading.Event(), []

    async def run() -> None:
        events: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        await events.put({"type": "lifespan.startup"})
        ended = asyncio.Event()

        async def send(message: dict[str, Any]) -> None:
            if message["type"].endswith(".failed"):
                failed.append(message)
                started.set()
            elif message["type"] == "lifespan.startup.complete":
                started.set()
            elif message["type"] == "lifespan.shutdown.complete":
                ended.set()

        task = asyncio.create_task(client.app({"type": "lifespan", "asgi": {"version": "3.0"}}, events.get, send))
        await asyncio.to_thread(stop.wait)
        await events.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(ended.wait(), 30)
        await task

    thread = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
    thread.start()
    try:
        assert started.wait(30) and not failed, failed
        yield
    finally:
        stop.set()
        thread.join(30)


def test_a_second_server_sweeps_only_the_uploads_no_live_server_owns(web, home):
    live, live_folder = another_server(home)
    killed, killed_folder = another_server(home)
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        old = home / "uploads" / "up-abcd1234"  # an older narrate's folder (no token), past NARRATE_SERVE_BODY_S
        old.mkdir()
        past = time.time() - web.settings.serve_body_s - 60
        os.utime(old, (past, past))
        recent = home / "uploads" / "up-wxyz9876"  # an older narrate's, recent: perhaps a body still arriving
        recent.mkdir()
        with serving(Client(web)):  # the server starting (its sweep), an upload of its own in flight
            mine = uploads.owner_of(home).folder()
            assert live_folder.is_dir() and (live_folder / "1" / "book.txt").read_text() == "in flight"
            assert recent.is_dir() and not killed_folder.exists() and not old.exists()
            owners = sorted(p.name for p in (home / uploads.OWNERS).iterdir())  # the killed one's lock went too
            assert len(owners) == 2 and uploads.owner_of(home).token in owners, owners
            third = uploads.Owner(home)  # a third server starting: nothing to sweep
            assert third.sweep(web.settings.serve_body_s) == []
            third.release()
            assert mine.is_dir() and live_folder.is_dir()
        # The server stopped: its own folders went with its lock; the other server's stay.
        assert not mine.exists() and live_folder.is_dir() and uploads.owner_of(home).token is None
    finally:
        live.kill()
        live.wait()
    fourth = uploads.Owner(home)
    assert fourth.sweep(web.settings.serve_body_s) == [live_folder]  # once that server is gone
    fourth.release()
    assert sorted(p.name for p in (home / "uploads").iterdir()) == ["up-wxyz9876"]


# 3. A narration keeps the callback URL it was first given.


def pending(web: Web) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in web.redis.hgetall(callbacks.KEY).items()}


def test_a_repeated_narration_keeps_its_first_callback_url(client, web):
    first = client.narrate("One callback only.", callback_url=f"{HOOK}/first")
    assert first.status == 202, first.text
    job_id = first.json()["id"]
    message = client.narrate("One callback only.", callback_url=f"{HOOK}/second").error(409, "callback_url")
    assert job_id in message and "one callback URL" in message
    assert pending(web) == {job_id: f"{HOOK}/first"}
    again = client.narrate("One callback only.", callback_url=f"{HOOK}/first")  # the same URL: the same narration
    assert again.status == 202 and again.json()["duplicate"] == "queued" and pending(web) == {job_id: f"{HOOK}/first"}
    assert client.narrate("One callback only.").status == 202  # none given: nothing changes
    assert pending(web) == {job_id: f"{HOOK}/first"}

    # It ends; its callback is taken (the POST fails: nobody listens). Another URL is still refused,
    # before anything is requeued; the first one again resumes it and its new end is posted there.
    assert client.call("POST", f"/v1/narrations/{job_id}/cancel").status == 200
    [due] = callbacks.due(web)
    assert not callbacks.send(web, due) and pending(web) == {}
    client.narrate("One callback only.", callback_url=f"{HOOK}/second").error(409, "callback_url")
    assert client.call("GET", f"/v1/narrations/{job_id}").json()["status"] == "cancelled"
    resumed = client.narrate("One callback only.", callback_url=f"{HOOK}/first")
    assert resumed.status == 202 and resumed.json()["duplicate"] == "resumed", resumed.text
    assert pending(web) == {job_id: f"{HOOK}/first"}

    # Deleted, the narration's URL goes with it: the same text is a new narration, any URL.
    client.call("POST", f"/v1/narrations/{job_id}/cancel")
    assert client.call("DELETE", f"/v1/narrations/{job_id}").status == 200
    assert client.narrate("One callback only.", callback_url=f"{HOOK}/second").status == 202
    assert pending(web) == {job_id: f"{HOOK}/second"}


def test_an_ended_narration_is_not_posted_to_a_url_given_afterwards(client, web):
    from narrate.jobs.server.records import fetch
    from rq.job import JobStatus

    made = client.narrate("Ended without a callback.")
    job_id = made.json()["id"]
    fetch(web.redis, job_id).set_status(JobStatus.FINISHED)  # as a worker leaves it
    message = client.narrate("Ended without a callback.", callback_url=f"{HOOK}/late").error(409, "callback_url")
    assert "already ended" in message and pending(web) == {}
    with pytest.raises(ApiError) as refused:  # and should it end between the check and the store
        callbacks.store(web.redis, [(job_id, "done")], f"{HOOK}/late")
    assert refused.value.status == 409 and pending(web) == {}


# 4. A narration is deleted once.


def test_a_narration_is_deleted_once_then_404(client, web, monkeypatch):
    job_id = client.narrate("Delete me once.").json()["id"]
    client.call("POST", f"/v1/narrations/{job_id}/cancel")
    assert client.call("DELETE", f"/v1/narrations/{job_id}").json()["deleted"] is True
    for _ in range(2):
        assert job_id in client.call("DELETE", f"/v1/narrations/{job_id}").error(404)

    # A second DELETE arriving while the first one removes it: 404 too, not a second 200.
    job_id = client.narrate("Delete me while deleting.").json()["id"]
    client.call("POST", f"/v1/narrations/{job_id}/cancel")
    forget, raced = narrations.chapter_previews.forget, []

    def meanwhile(*args: Any) -> None:
        if not raced:  # once: the other request comes while this one removes the narration
            raced.append(None)
            try:
                raced[0] = narrations.delete_narration(web, job_id)
            except JobNotFound as e:
                raced[0] = e
        forget(*args)

    monkeypatch.setattr(narrations.chapter_previews, "forget", meanwhile)
    assert client.call("DELETE", f"/v1/narrations/{job_id}").status == 200
    assert len(raced) == 1 and isinstance(raced[0], JobNotFound), raced
    assert client.call("DELETE", f"/v1/narrations/{job_id}").status == 404


# 5. Only the models the server offers, or published Qwen3-TTS ids; never a path.


def test_the_api_takes_only_offered_models_and_published_ids(client, web, tmp_path, monkeypatch, checkpoint):
    from narrate.jobs.api.model_choice import DEFAULT_MODELS, check_model

    offered = [m["id"] for m in client.call("GET", "/v1/models").json()["data"]]
    assert set(DEFAULT_MODELS) <= set(offered) and "tts-1" in offered
    assert str(checkpoint) not in offered  # the server's own, a path: taken but not shown
    s = web.settings
    for model in ("tts-1", str(checkpoint)):
        assert choices.check_model(model, s) is None
    published = ("Qwen/Qwen3-TTS-12Hz-0.6B-Base", "mlx-community/Qwen3-TTS-12Hz-1.7B-VoiceDesign-4bit")
    for model in (*DEFAULT_MODELS, *published):
        assert choices.check_model(model, s) == model
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tiny").symlink_to(checkpoint)  # a checkpoint in the server's folder
    refused = (
        "org/name",
        "someone/Qwen3-TTS-12Hz-1.7B-Base",
        "nobody/Nothing-Base",
        "models/tiny",
        "models/missing",
        "../tiny",
        "/etc",
        "~/x",
        f"Qwen/Qwen3-TTS-12Hz-1.7B-Base/../../{tmp_path}",
    )
    for model in refused:
        with pytest.raises(ApiError, match="unknown model") as e:
            choices.check_model(model, s)
        assert e.value.status == 400 and e.value.param == "model"
    client.narrate("Which model?", model="org/name").error(400, "model")
    client.narrate("Which model?", model="models/tiny").error(400, "model")
    speech = {"model": "someone/Qwen3-TTS-12Hz-1.7B-Base", "voice": "alice", "input": "Hi."}
    client.call("POST", "/v1/audio/speech", json.dumps(speech).encode(), {"content-type": "application/json"}).error(
        400, "model"
    )
    client.call("GET", "/v1/audio/voices", query="model=org%2Fname").error(400, "model")
    presets = client.call("GET", "/v1/audio/voices", query="model=mlx-community%2FQwen3-TTS-12Hz-1.7B-CustomVoice")
    assert "ryan" in [v["id"] for v in presets.json()["voices"]]
    assert web.redis.keys("rq:job:*") == []  # nothing enqueued
    # The command line keeps its rule: a local checkpoint, a relative path made absolute where it was typed.
    assert check_model("models/tiny") == str(tmp_path / "models" / "tiny")


# 6. No bidi controls on a page or in a download's name.


def test_bidi_controls_reach_no_page_and_no_download_name(client, web, voice_wav):
    title = f"Harbor{BIDI}\u202egpj.exe"
    made = client.narrate("A title that reads backwards.", title=title)
    assert made.status == 202, made.text
    job_id = made.json()["id"]
    sample = ("erin.wav", voice_wav.read_bytes(), "audio/wav")
    saved = client.form(
        "/v1/audio/voices",
        [("name", "erin"), ("consent", "true"), ("audio_sample", sample), ("description", f"a low{BIDI} alto")],
    )
    assert saved.status == 201, saved.text
    not_audio = ("c\u202eav.wav", b"not audio", "audio/wav")
    said = client.form("/v1/audio/voices", [("name", "carol"), ("consent", "true"), ("audio_sample", not_audio)])
    assert not set(said.error(400)) & set(BIDI)  # the file named as sent, less its bidi controls
    for path in ("/queue", f"/jobs/{job_id}", "/queue/rows", "/voices", "/new"):
        shown = client.page(path)
        assert not set(shown) & set(BIDI), path
    assert "Harborgpj.exe" in client.page(f"/jobs/{job_id}") and "a low alto" in client.page("/voices")
    answer = client.form(
        "/voices/add",
        [("name", "dave"), ("consent", "true"), ("audio_sample", ("d\u202eav.wav", b"not audio", "audio/wav"))],
    )
    assert not set(client.page("/voices", answer)) & set(BIDI)  # what the action said, too
    stem = views.book_facts(web.redis, [job_id])[job_id]["stem"]
    for name in (f"{stem}.mp3", f"{stem}/01 - One\u202e.mp3", "x\u2067.mp3"):
        saved_as = views.file_download_name(web.redis, job_id, name)
        assert not set(saved_as) & set(BIDI) and saved_as.startswith("Harborgpj.exe"), saved_as
    assert views.download_name(title, "s", f"s - Part 2{BIDI}.mp3") == "Harborgpj.exe - Part 2.mp3"
    assert uploads.safe_name(f"my\u202eboo{BIDI}k.txt", "x") == "mybook.txt"
    assert without_bidi(f"a{BIDI}b\u00e9\u05d0\t") == "ab\u00e9\u05d0\t"  # only the controls go


# 7. A single-valued field given twice: 400 naming it, nothing left under uploads/.


def test_a_repeated_single_valued_field_is_a_400_naming_it_and_leaves_nothing(client, home):
    urlencoded = {"content-type": "application/x-www-form-urlencoded"}
    for body in (b"text=a&text=b&text=c&voice=alice", b"text=a&text=b&voice=alice"):
        client.call("POST", "/v1/narrations", body, urlencoded).error(400, "text")
    client.form("/v1/narrations", [("text", "a"), ("text", "b"), ("text", "c"), ("voice", "alice")]).error(400, "text")
    for field in ("voice", "format", "callback_url", "title"):
        fields = [("text", "One."), ("voice", "alice"), (field, "mp3"), (field, "wav")]
        if field == "voice":
            fields = [("text", "One."), ("voice", "alice"), ("voice", "bob")]
        assert field in client.form("/v1/narrations", fields).error(400, field)
    client.call("POST", "/v1/narrations", b"text=a&voice=alice&voice=bob", urlencoded).error(400, "voice")
    client.form(
        "/v1/audio/voices",
        [("name", "x"), ("name", "y"), ("consent", "true"), ("audio_sample", ("x.wav", b"RIFF", "audio/wav"))],
    ).error(400, "name")
    page = client.form("/new", [("text", "a"), ("text", "b"), ("text", "c"), ("voice", "alice")])
    assert page.status == 400 and "give one text field" in page.text, page.text[:500]
    page = client.form("/new", [("text", "a"), ("voice", "alice"), ("title", "One"), ("title", "Two")])
    assert page.status == 400 and "title" in page.text
    assert left_under_uploads(home) == []


# 8. Odd ids, websockets, a query string's text.


@pytest.mark.parametrize("bad", ["narrate-*", "narrate-\x00", "narrate-a\x00b", "*", "narrate-a*b"])
def test_an_odd_narration_id_is_404_on_every_route(client, bad):
    for method, rest in (
        ("GET", ""),
        ("GET", "/events"),
        ("POST", "/cancel"),
        ("POST", "/resume"),
        ("GET", "/files/book.mp3"),
        ("GET", "/chapters/1/audio"),
        ("DELETE", ""),
    ):
        assert client.call(method, f"/v1/narrations/{bad}{rest}").error(404)
    assert client.call("GET", f"/jobs/{bad}").status == 404
    assert client.call("GET", f"/jobs/{bad}/cover").status == 404


def test_websocket_requests_are_refused_before_the_app():
    async def app(scope, receive, send) -> None:
        raise AssertionError("the app was called")

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    g = Guard(app, served_hosts("127.0.0.1", 8000), None, BodyRules(), 1 << 20)
    scope = {"type": "websocket", "path": "/v1/narrations", "headers": [(b"host", b"127.0.0.1:8000")]}
    asyncio.run(g(scope, receive, send))
    assert sent == [{"type": "websocket.close", "code": 1008, "reason": "no websockets here"}]


def test_text_from_a_query_string_is_never_shown(client):
    phish = "Call 0800 PHISH now"
    query = "error=" + quote(phish) + "&said=" + quote(phish) + "&message=" + quote(phish)
    for path in ("/queue", "/new", "/voices", "/books", "/queue/rows"):
        assert "PHISH" not in client.page(path, query=query), path
