"""`narrate info`: the server (embedded, or the URL with its password hidden), the three queues
with jobs per state, the workers with host, current job and model, and the schedules."""

from __future__ import annotations

import json
import socket

from helpers.books import write_docs
from helpers.fake import fake_env
from helpers.ops import submit_json
from helpers.procs import narrate, start_worker, stop_worker, wait_until
from helpers.servers import PrivateRedis


def test_info_on_a_password_protected_server(env, home, voice_wav):
    server = PrivateRedis()
    server.start()
    try:
        e = fake_env(env, home, delay_ms=80, NARRATE_REDIS_URL=server.url)
        a, b, c = write_docs(home, {"a.txt": 120, "b.txt": 2, "c.txt": 2})  # a runs ~10 s: two `info` calls see it
        [running] = submit_json(e, [a], voice_wav, "-o", str(home / "out"))
        submit_json(e, [b], voice_wav, "-o", str(home / "out"), "--priority", "low")
        submit_json(e, [c], voice_wav, "-o", str(home / "out"), "--priority", "high", "--in", "1h")
        idle = json.loads(narrate(e, "info", "--json").stdout)
        assert idle["workers"] == []
        counts = {q["name"]: q for q in idle["queues"]}
        assert (counts["narrate-high"]["scheduled"], counts["narrate"]["queued"], counts["narrate-low"]["queued"]) == (
            1,
            1,
            1,
        )
        worker = start_worker(e)
        try:
            wait_until(lambda: _busy(e), 20, "a busy worker")
            facts = json.loads(narrate(e, "info", "--json").stdout)
            text = narrate(e, "info")
        finally:
            stop_worker(worker)
    finally:
        server.close()
    assert server.password not in text.stdout + text.stderr + json.dumps(facts)
    assert facts["server"]["kind"] == "url" and facts["server"]["url"] == f"redis://:***@127.0.0.1:{server.port}/0"
    [w] = facts["workers"]
    assert w["host"] == socket.gethostname() and w["current_job"] == running["id"]
    assert w["current_document"] == "a.txt" and w["model"] == "fake (bf16)"
    assert w["queues"] == ["narrate-high", "narrate", "narrate-low"]
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert f"server: redis://:***@127.0.0.1:{server.port}/0 (NARRATE_REDIS_URL" in out
    assert "narrate-high (high): 0 queued, 1 scheduled, 0 started" in out
    assert f"job {running['id']} (a.txt); model fake (bf16)" in out and f"on {socket.gethostname()}" in out
    assert "schedules:" in out


def test_info_on_the_embedded_server_with_an_idle_worker(env, home, checkpoint):
    e = fake_env(env, home)
    worker = start_worker(e)
    try:
        wait_until(lambda: json.loads(narrate(e, "info", "--json").stdout)["workers"], 20, "the worker")
        facts = json.loads(narrate(e, "info", "--json").stdout)
    finally:
        stop_worker(worker)
    assert facts["server"]["kind"] == "embedded" and facts["server"]["url"] == f"unix://{home}/valkey.sock"
    assert facts["server"]["version"]
    [w] = facts["workers"]
    assert w["current_job"] is None and w["model"] == str(checkpoint)  # its NARRATE_MODEL when idle


def _busy(env: dict) -> bool:
    workers = json.loads(narrate(env, "info", "--json").stdout)["workers"]
    return bool(workers) and workers[0]["current_job"] is not None


def test_info_says_which_blas_mlx_float32_products_use(env, home):
    """On this host, and as each worker recorded it when it started (worker/blas.py's rule)."""
    from helpers.blas import system_openblas

    want = "libopenblas.so.0 (the system OpenBLAS)" if system_openblas() else "MLX's own, the bundled reference BLAS"
    e = fake_env(env, home)
    worker = start_worker(e)
    try:
        wait_until(lambda: json.loads(narrate(e, "info", "--json").stdout)["workers"], 20, "the worker")
        facts = json.loads(narrate(e, "info", "--json").stdout)
        text = narrate(e, "info").stdout
    finally:
        stop_worker(worker)
    assert facts["blas"].startswith(want), facts["blas"]
    [w] = facts["workers"]
    assert w["blas"].startswith(want), w
    assert f"blas: MLX's float32 products on this host use {want}" in text, text
    assert f"; blas {want}" in text, text
    bundled = narrate({**e, "NARRATE_BLAS": "bundled"}, "info", "--json")
    assert json.loads(bundled.stdout)["blas"].startswith("MLX's own, the bundled reference BLAS (NARRATE_BLAS=bundled")
