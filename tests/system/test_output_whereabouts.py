"""A finished book that a reader cannot find says why, the same through `narrate export`, `narrate
fetch` and GET /v1/narrations/{id}: another host wrote it, this host wrote it under another output
root (NARRATE_OUTPUT_DIR differs between the worker and the reader), or it was deleted since; and
`narrate run` inside the output root records its book relative to that root, as a worker does."""

from __future__ import annotations

import json
from pathlib import Path

import requests
from helpers.fake import fake_env
from helpers.procs import narrate, wait_for_job
from helpers.servers import free_port
from helpers.web import start_serve, stop, wait_serving


def _finished(e: dict, doc: Path, voice: Path) -> str:
    proc = narrate(e, "submit", str(doc), "--voice", str(voice), "--json", "-o", "shelf/doc.wav")
    assert proc.returncode == 0, proc.stderr
    job_id = json.loads(proc.stdout)["id"]
    worker = narrate(e, "worker", "--burst", "--quiet", timeout=120)
    assert worker.returncode == 0, worker.stderr
    assert wait_for_job(job_id)["status"] == "finished"
    return job_id


def _missing(url: str, job_id: str) -> dict:
    got = requests.get(f"{url}/v1/narrations/{job_id}", timeout=10)
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["outputs"] == [], body
    return body["files_missing"]


def _set_hostname(job_id: str, name: str) -> None:
    from narrate.jobs.server.connection import Connection
    from narrate.jobs.server.records import fetch
    from narrate.jobs.settings import Settings

    with Connection(Settings.from_env()) as conn:
        job = fetch(conn.redis, job_id)
        job.meta["hostname"] = name
        job.save_meta()


def test_export_fetch_and_the_api_name_why_a_book_is_not_here(env, home, voice_wav, tmp_path):
    e = fake_env(env, home)
    doc = tmp_path / "doc.txt"
    doc.write_text("A fine sentence.")
    job_id = _finished(e, doc, voice_wav)
    root, other = home / "out", home / "elsewhere"
    other.mkdir()
    lib = tmp_path / "lib"
    lib.mkdir()
    moved = {**e, "NARRATE_OUTPUT_DIR": str(other)}
    ports = free_port(), free_port()
    servers = [start_serve(e, ports[0]), start_serve(moved, ports[1])]
    same, elsewhere = (f"http://127.0.0.1:{p}" for p in ports)
    try:
        for proc, url in zip(servers, (same, elsewhere), strict=True):
            wait_serving(proc, url)

        # this host, another output root: both roots named, and the setting that differs
        proc = narrate(moved, "export", job_id, "--library", str(lib))
        err = proc.stderr.strip()
        assert proc.returncode != 0 and len(err.splitlines()) == 1, err
        assert "NARRATE_OUTPUT_DIR differs" in err and str(root) in err and str(other) in err, err
        assert "another host" not in err and "not on this host" not in err, err
        why = _missing(elsewhere, job_id)
        assert why["reason"] == "other_root" and why["root"] == str(root) and why["here_root"] == str(other), why
        assert "NARRATE_OUTPUT_DIR differs" in why["message"], why

        # another host (its file is not here): named, and `narrate fetch` offered
        (root / "shelf" / "doc.wav").unlink()
        _set_hostname(job_id, "far-away-host")
        proc = narrate(e, "export", job_id, "--library", str(lib))
        err = proc.stderr.strip()
        assert proc.returncode != 0 and "host far-away-host" in err and f"narrate fetch {job_id}" in err, err
        why = _missing(same, job_id)
        assert why["reason"] == "other_host" and why["host"] == "far-away-host", why
        _set_hostname(job_id, why["here_host"])

        # this host, and deleted since: said so, by export, fetch (at once, not after asking a worker) and the API
        proc = narrate(e, "export", job_id, "--library", str(lib))
        assert proc.returncode != 0 and "not there any more (deleted or moved" in proc.stderr, proc.stderr
        proc = narrate(e, "fetch", job_id, "-o", str(tmp_path / "copy.wav"), timeout=20)
        assert proc.returncode != 0 and "not there any more (deleted or moved" in proc.stderr, proc.stderr
        why = _missing(same, job_id)
        assert why["reason"] == "gone" and why["path"] == str(root / "shelf" / "doc.wav"), why
        page = requests.get(f"{same}/jobs/{job_id}", timeout=10).text
        assert 'data-files-missing="gone"' in page and "not there any more" in page, page
    finally:
        for proc in servers:
            stop(proc)


def test_run_inside_the_output_root_records_its_book_relative_to_it(env, home, voice_wav, tmp_path):
    e = fake_env(env, home)
    shelf = home / "out" / "shelf"
    shelf.mkdir(parents=True)
    doc = tmp_path / "doc.txt"
    doc.write_text("A fine sentence.")
    proc = narrate(e, "run", str(doc), "--voice", str(voice_wav), "--json", timeout=120, cwd=shelf)
    assert proc.returncode == 0, proc.stderr
    st = json.loads(proc.stdout)
    assert st["output"] == str(shelf / "doc.mp3") and st["result"]["output_relative"] == "shelf/doc.mp3", st
    lib = tmp_path / "lib"
    lib.mkdir()
    proc = narrate(e, "export", st["id"], "--library", str(lib))  # found under the same root as a worker's
    assert proc.returncode == 0, proc.stderr
