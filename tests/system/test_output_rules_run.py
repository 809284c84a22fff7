"""Where outputs go, with a worker or `narrate run`: run writes where -o points, from the current
directory; a job submitted with a relative -o is written under the output root."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.fake import fake_env
from helpers.procs import narrate, wait_for_job


def submitted(env, doc: Path, voice: Path, *args: str, cwd: Path) -> dict:
    proc = narrate(env, "submit", str(doc), "--voice", str(voice), "--json", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_run_writes_where_o_points_from_the_current_directory(env, home, voice_wav, tmp_path):
    e = fake_env(env, home)  # NARRATE_OUTPUT_DIR is home/out: run does not use it
    doc = tmp_path / "doc.txt"
    doc.write_text("A fine sentence.")
    for args, want in [([], tmp_path / "doc.mp3"), (["-o", "sub/s.wav"], tmp_path / "sub" / "s.wav")]:
        proc = narrate(e, "run", str(doc), "--voice", str(voice_wav), *args, timeout=120, cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout.strip() == str(want), proc.stderr
        assert want.is_file()
    assert not any((home / "out").iterdir())


def test_a_job_submitted_with_a_relative_output_is_written_there(env, home, voice_wav, tmp_path, external_redis):
    e = fake_env(env, home)
    doc = tmp_path / "doc.txt"
    doc.write_text("A fine sentence.")
    job = submitted(e, doc, voice_wav, "-o", "shelf/doc.wav", cwd=tmp_path)
    proc = narrate(e, "worker", "--burst", "--quiet", cwd=home)
    assert proc.returncode == 0, proc.stderr
    assert wait_for_job(job["id"])["status"] == "finished"
    assert (home / "out" / "shelf" / "doc.wav").is_file() and not (tmp_path / "shelf").exists()


def test_run_warns_of_an_undeclared_tag(env, home, voice_wav, tmp_path):
    e = fake_env(env, home)
    doc = tmp_path / "doc.txt"
    doc.write_text("One line.\n[Mr. Darcy] A fine sentence.")
    proc = narrate(e, "run", str(doc), "--voice", str(voice_wav), timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning: doc.txt line 2: [Mr. Darcy] names no voice" in proc.stderr, proc.stderr
