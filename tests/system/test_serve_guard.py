"""`narrate serve` without a worker: bad input gets the right status and a JSON error that says what
to do, and nothing half-enqueued; the guard (Host, Origin, the API key, binds off loopback); the
voice library over HTTP; cancel, resume and delete of a scheduled narration; and the OpenAPI
document: every documented operation called (by hand, then by schemathesis' generated requests)
and every response checked against its schema and its documented status codes."""

from __future__ import annotations

import socket
import subprocess

import pytest
from helpers.procs import NARRATE
from helpers.servers import free_port
from helpers.web import remove_home, serve, serve_env, start_serve, stop, wait_serving


@pytest.fixture(scope="module")
def served(checkpoint, voice_wav):
    s = serve(checkpoint, NARRATE_SERVE_STALL_S="1")
    with open(voice_wav, "rb") as f:
        assert s.post("/v1/audio/voices", files={"audio_sample": f}, data={"name": "alice", "consent": "true"}).ok
    yield s
    logs = s.close()
    assert "Traceback" not in logs, logs


def error(r, status: int, says: str) -> dict:
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"] == "application/json"
    body = r.json()["error"]
    assert says in body["message"], body
    assert body["type"] and not any(k.startswith("access-control") for k in r.headers)
    return body


def jobs_in_redis(served) -> list[str]:
    return [n["id"] for n in served.get("/v1/narrations").json()["data"]]


def raw_post(served, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
    """A request whose body is declared but not all sent (the server answers before reading it)."""
    port = int(served.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        s.sendall(head.encode() + body)
        reply = b""
        while b"\r\n\r\n" not in reply or len(reply.split(b"\r\n\r\n", 1)[1]) < 2:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    status = int(reply.split(b" ", 2)[1])
    return status, reply.split(b"\r\n\r\n", 1)[1]


def test_bad_input_is_refused_with_a_json_error_and_nothing_enqueued(served, voice_wav):
    before = jobs_in_redis(served)  # the module's server: another test of it may have run first on this process
    post = served.post
    one = {"voice": "alice"}
    error(post("/v1/narrations", data=one, files={"file": ("empty.txt", b"")}), 400, "empty.txt has no text")
    binary = {"file": ("book.txt", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)}
    error(post("/v1/narrations", data=one, files=binary), 400, "book.txt contains NUL")
    error(post("/v1/narrations", data={"voice": "nobody", "text": "Hi."}), 400, "no saved voice named 'nobody'")
    error(post("/v1/narrations", data={"voice": "/etc/passwd", "text": "Hi."}), 400, "is not a voice name")
    error(post("/v1/narrations", data={**one, "text": "Hi.", "at": "tomorrow"}), 400, "at 'tomorrow' is not a date")
    error(
        post("/v1/narrations", data={**one, "text": "Hi.", "callback_url": "http://169.254.169.254/"}),
        400,
        "NARRATE_CALLBACK_HOSTS",
    )
    error(post("/v1/narrations", data={**one, "text": "Hi.", "colour": "red"}), 400, "unknown field 'colour'")
    error(post("/v1/narrations", data={**one, "text": "Hi."}, files={"file": ("a.txt", b"A.")}), 400, "not both")
    error(post("/v1/narrations", data="text=Hi", headers={"content-type": "text/plain"}), 415, "multipart/form-data")
    # Several documents: one bad one refuses them all.
    files = [("file", ("good.txt", b"Good text.")), ("file", ("bad.txt", b""))]
    error(post("/v1/narrations", data=one, files=files), 400, "bad.txt has no text")
    error(
        post("/v1/narrations", files={"voice_sample": ("me.wav", b"RIFF"), "text": (None, "Hi.")}),
        400,
        "voice file me.wav",
    )
    # A cast: a member's voice is never a file of the server; a member the text names must be declared.
    cast = {**one, "text": "Hi. [bob] Hello. [/]"}
    error(post("/v1/narrations", data={**cast, "cast_voice": "bob=/etc/passwd"}), 400, "cast voice 'bob'")
    error(post("/v1/narrations", data={**cast, "cast_voice": "alice"}), 400, "write LABEL=VOICE")
    error(post("/v1/narrations", data={**cast, "cast_voice": "carol=alice", "strict": "true"}), 400, "bob")
    error(post("/v1/narrations", data={**cast, "cast_voice": "bob=alice", "markup": "yaml"}), 400, "markup 'yaml': use")
    # One model policy for every model field: proof and word_timings take auto or a published recognizer / aligner,
    # never another hub id or a path (nor say which paths the server has).
    for field, value in [
        ("proof", "someone/evil-asr"),
        ("proof", "/etc"),
        ("proof", str(served.home)),
        ("proof", "../x"),
        ("word_timings", "someone/evil-aligner"),
        ("word_timings", "/tmp"),
        ("word_timings", "mlx-community/parakeet-tdt-0.6b-v2"),
    ]:
        got = post("/v1/narrations", data={**one, "text": "Hi.", field: value})
        error(got, 400, f"unknown {field} model")
        assert got.json()["error"]["param"] == field and "exist" not in got.text and "config.json" not in got.text
        said = got.json()["error"]["message"]
        assert ("speech recognizer" in said) == (field == "proof") and ("forced aligner" in said) != (field == "proof")

    speech = {"model": "tts-1", "input": "Hi.", "voice": "alice"}
    error(post("/v1/audio/speech", json={**speech, "speed": 2.0}), 400, "only 1.0 is supported")
    error(post("/v1/audio/speech", json={**speech, "voice": "alloy"}), 400, "NARRATE_OPENAI_VOICES=alloy=NAME")
    error(post("/v1/audio/speech", json={**speech, "model": "/etc"}), 400, "unknown model '/etc'")
    error(post("/v1/audio/speech", json={**speech, "voice": "data:audio/wav;base64,!!"}), 400, "not valid base64")
    error(post("/v1/audio/speech", json={**speech, "input": "x" * 5000}), 413, "POST /v1/narrations")
    error(post("/v1/audio/speech", json={**speech, "response_format": "ogg"}), 422, "response_format")
    error(post("/v1/audio/speech", data=b"{", headers={"content-type": "application/json"}), 422, "not valid JSON")
    # 100 MB of text: refused from its Content-Length, before the body is read.
    huge = {"Content-Type": "application/json", "Content-Length": str(100 * 2**20)}
    status, body = raw_post(served, "/v1/audio/speech", huge, b'{"input": "')
    assert status == 413 and b"POST /v1/narrations" in body
    # A slow client: a body that stalls longer than NARRATE_SERVE_STALL_S (1 s here) is dropped.
    slow = {"Content-Type": "application/json", "Content-Length": "1000"}
    status, body = raw_post(served, "/v1/audio/speech", slow, b'{"input": "')
    assert status == 408 and b"stalled" in body
    # A document over the cap, streamed: refused while it arrives.
    status, body = raw_post(
        served,
        "/v1/narrations",
        {"Content-Type": "multipart/form-data; boundary=xx", "Content-Length": str(30 * 2**20)},
        b'--xx\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n\r\n' + b"word " * (5 * 2**20),
    )
    assert status == 413 and b"big.txt is larger than 20 MiB" in body
    assert jobs_in_redis(served) == before  # nothing enqueued
    assert list((served.home / "uploads").iterdir()) == []  # every upload's folder removed


def test_the_guard(served):
    error(served.get("/v1/models", headers={"Host": "evil.example"}), 400, "is not served here")
    error(
        served.post("/v1/narrations", headers={"Origin": "http://evil.example"}, data={"text": "Hi."}),
        403,
        "cross-site request from http://evil.example",
    )
    error(served.post("/v1/audio/speech", headers={"Sec-Fetch-Site": "cross-site"}, json={}), 403, "cross-site")
    error(served.get("/v1/narrations", headers={"Origin": "http://evil.example"}), 403, "cross-origin read")
    same = served.get("/v1/models", headers={"Origin": served.url})
    assert same.status_code == 200 and "access-control-allow-origin" not in same.headers
    assert same.headers["x-frame-options"] == "DENY" and "default-src 'none'" in same.headers["content-security-policy"]
    assert served.get("/docs").status_code == 200 and served.get("/openapi.json").json()["info"]["title"] == "narrate"


def test_an_api_key_off_loopback_and_on_it(checkpoint):
    env, home = serve_env(checkpoint)
    try:
        refused = subprocess.run(
            [*NARRATE, "serve", "--bind", "0.0.0.0", "--port", str(free_port())],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert refused.returncode == 1 and "refusing to serve on 0.0.0.0 without an API key" in refused.stderr
        key = "k" * 32
        port = free_port()
        proc = start_serve(dict(env, NARRATE_API_KEY=key), port)  # on loopback: the key is still required
        url = f"http://127.0.0.1:{port}"
        try:
            wait_serving(proc, url)
            import requests

            error(requests.get(f"{url}/v1/models", timeout=10), 401, "no API key")
            wrong = requests.get(f"{url}/v1/models", headers={"Authorization": "Bearer nope"}, timeout=10)
            assert error(wrong, 401, "a wrong API key") and wrong.headers["www-authenticate"].startswith("Bearer")
            ok = requests.get(f"{url}/v1/models", headers={"Authorization": f"Bearer {key}"}, timeout=10)
            assert ok.status_code == 200 and ok.json()["object"] == "list"
        finally:
            stop(proc)
    finally:
        remove_home(home)


def test_voices_over_http(served, voice_wav):
    sample = voice_wav.read_bytes()
    error(
        served.post("/v1/audio/voices", files={"audio_sample": ("b.wav", sample)}, data={"name": "bob"}),
        400,
        "consent must be true",
    )
    made = served.post(
        "/v1/audio/voices",
        files={"audio_sample": ("b.wav", sample)},
        data={"name": "Bob", "consent": "true", "ref_text": "Hello.", "speaker_description": "low"},
    )
    assert made.status_code == 201 and made.json()["id"] == "bob" and made.json()["description"] == "low"
    error(
        served.post(
            "/v1/audio/voices", files={"audio_sample": ("b.wav", sample)}, data={"name": "bob", "consent": "true"}
        ),
        409,
        "a voice named 'bob' exists",
    )
    listed = served.get("/v1/audio/voices").json()["voices"]
    assert [(v["id"], v["name"], v["kind"]) for v in listed] == [("alice", "alice", "clone"), ("bob", "bob", "clone")]
    gone = served.delete("/v1/audio/voices/bob")
    assert gone.status_code == 200 and gone.json()["deleted"] is True
    error(served.delete("/v1/audio/voices/bob"), 404, "no saved voice named 'bob'")


def test_cancel_resume_and_delete_of_a_scheduled_narration(served):
    made = served.post("/v1/narrations", data={"voice": "alice", "text": "Later, please.", "in": "1h"})
    assert made.status_code == 202 and made.json()["status"] == "scheduled" and made.json()["scheduled_for"]
    job_id = made.json()["id"]
    error(served.delete(f"/v1/narrations/{job_id}"), 409, "cancel it first")
    canceled = served.post(f"/v1/narrations/{job_id}/cancel").json()
    assert canceled["status"] == "cancelled" and canceled["action"] == "canceled"
    assert served.post(f"/v1/narrations/{job_id}/cancel").json()["action"] == "already canceled"
    resumed = served.post(f"/v1/narrations/{job_id}/resume").json()
    assert resumed["status"] == "queued" and resumed["action"] == "requeued"
    error(served.post(f"/v1/narrations/{job_id}/resume"), 409, "nothing to resume")
    served.post(f"/v1/narrations/{job_id}/cancel")
    deleted = served.delete(f"/v1/narrations/{job_id}")
    assert deleted.status_code == 200 and deleted.json() == {
        "id": job_id,
        "object": "narration.deleted",
        "deleted": True,
        "files": [],
    }
    error(served.get(f"/v1/narrations/{job_id}"), 404, "no job")
    error(served.post("/v1/narrations/narrate-nope/cancel"), 404, "no job 'narrate-nope'")


def test_the_openapi_document_by_hand_and_generated(served, voice_wav, tmp_path):
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(tmp_path / "hypothesis")  # its caches, not in the checkout
    from schemathesis.checks import (
        content_type_conformance,
        not_a_server_error,
        response_schema_conformance,
        status_code_conformance,
    )

    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    schema = schemathesis.openapi.from_url(f"{served.url}/openapi.json")
    documented = {(r.ok().method.upper(), r.ok().path) for r in schema.get_all_operations()}
    job = served.post("/v1/narrations", data={"voice": "alice", "text": "Scheduled.", "in": "2h"}).json()["id"]
    sample = voice_wav.read_bytes()
    calls = [  # (method, path, Case arguments): at least one call of every documented operation
        ("GET", "/v1/models", {}),
        ("GET", "/v1/narrations", {"query": {"status": "scheduled"}}),
        ("GET", "/v1/narrations/{narration_id}", {"path_parameters": {"narration_id": job}}),
        ("GET", "/v1/narrations/{narration_id}", {"path_parameters": {"narration_id": "narrate-nope"}}),
        ("GET", "/v1/narrations/{narration_id}/files/{name}", {"path_parameters": {"narration_id": job, "name": "x"}}),
        (
            "GET",
            "/v1/narrations/{narration_id}/chapters/{number}/audio",
            {"path_parameters": {"narration_id": job, "number": 1}},
        ),
        ("GET", "/v1/narrations/{narration_id}/audio", {"path_parameters": {"narration_id": job}}),  # none yet: 404
        ("GET", "/v1/narrations/{narration_id}/proof", {"path_parameters": {"narration_id": job}}),  # without proof
        ("GET", "/v1/narrations/{narration_id}/proof", {"path_parameters": {"narration_id": "narrate-nope"}}),
        (
            "POST",
            "/v1/narrations/{narration_id}/redo",
            {"path_parameters": {"narration_id": job}, "body": {"sentences": [1]}},
        ),  # scheduled: not finished
        (
            "POST",
            "/v1/narrations/{narration_id}/redo",
            {"path_parameters": {"narration_id": "narrate-nope"}, "body": {"sentences": [1]}},
        ),
        (
            "POST",
            "/v1/narrations",
            {"body": {"text": "Hello.", "voice": "alice", "in": "3h"}, "media_type": "multipart/form-data"},
        ),
        ("POST", "/v1/narrations", {"body": {"text": "Hi.", "voice": "nobody"}, "media_type": "multipart/form-data"}),
        ("POST", "/v1/narrations/{narration_id}/cancel", {"path_parameters": {"narration_id": job}}),
        ("POST", "/v1/narrations/{narration_id}/cancel", {"path_parameters": {"narration_id": job}}),
        ("GET", "/v1/narrations/{narration_id}/events", {"path_parameters": {"narration_id": job}}),
        ("POST", "/v1/narrations/{narration_id}/resume", {"path_parameters": {"narration_id": "narrate-nope"}}),
        ("DELETE", "/v1/narrations/{narration_id}", {"path_parameters": {"narration_id": job}}),
        ("POST", "/v1/audio/speech", {"body": {"model": "tts-1", "input": "Hi.", "voice": "alice", "speed": 2}}),
        ("GET", "/v1/audio/voices", {}),
        (
            "POST",
            "/v1/audio/voices",
            {"body": {"name": "carol", "consent": True, "audio_sample": sample}, "media_type": "multipart/form-data"},
        ),
        ("DELETE", "/v1/audio/voices/{name}", {"path_parameters": {"name": "carol"}}),  # alice's sample, named by a job
        ("DELETE", "/v1/audio/voices/{name}", {"path_parameters": {"name": "carol"}, "query": {"force": True}}),
        ("DELETE", "/v1/audio/voices/{name}", {"path_parameters": {"name": "carol"}}),
    ]
    assert {(m, p) for m, p, _ in calls} == documented
    statuses = []
    for method, path, kwargs in calls:
        case = schema[path][method].Case(**kwargs)
        statuses.append(case.call_and_validate(checks=checks).status_code)
    assert statuses == [
        200,
        200,
        200,
        404,
        404,
        404,
        404,
        409,
        404,
        409,
        404,
        202,
        400,
        200,
        200,
        200,
        404,
        200,
        400,
        200,
        201,
        409,
        200,
        404,
    ]

    for found in schema.get_all_operations():  # then requests generated from the schema, a few each

        @given(case=found.ok().as_strategy())
        @settings(
            max_examples=10, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None
        )
        def generated(case):
            case.call_and_validate(checks=checks)

        generated()
