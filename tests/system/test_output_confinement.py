"""A real worker (fake engine) writes its book only inside the output root, even when someone
swaps a directory of the output path, the output name itself or the root's parent for a symlink
while the job synthesizes: the job fails with a clear error (or writes inside the root) and
nothing appears outside the root."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.books import book
from helpers.fake import fake_env, wait_synthesized
from helpers.faults import partials
from helpers.ops import submit
from helpers.procs import NARRATE, narrate, wait_for_job

N = 12


def files_under(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if not p.is_dir())


def run_with_swap(e: dict, home: Path, voice: Path, out: Path, swap, *extra: str) -> dict:
    """Submit a book to `out`, start a worker, call `swap()` once a few sentences are done."""
    doc = home / "doc.txt"
    doc.write_text(book(N))
    job_id = submit(e, doc, voice, out, *extra)
    worker = subprocess.Popen(
        [*NARRATE, "worker", "--burst", "--quiet"],
        env=e,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_synthesized(home, 2)
        swap()
        worker.communicate(timeout=120)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()
    return wait_for_job(job_id)


def test_directory_swapped_for_a_symlink_mid_job(env, home, voice_wav):
    e = fake_env(env, home, delay_ms=150)
    outside = home / "outside"
    outside.mkdir()
    sub = home / "out" / "sub"
    sub.mkdir()

    def swap():
        sub.rename(home / "sub.moved")
        sub.symlink_to(outside)

    st = run_with_swap(e, home, voice_wav, sub / "book.wav", swap)
    assert st["status"] == "failed" and "sub under the output root" in st["error"] and "is a symlink" in st["error"], st
    assert files_under(outside) == [] and files_under(home / "sub.moved") == []
    assert partials(home) == []


@pytest.mark.parametrize("overwrite", [False, True])
def test_output_name_swapped_for_a_symlink(env, home, voice_wav, overwrite):
    """A link planted at the output name mid-job is not narrate's file: the job refuses to replace
    it (with --overwrite it replaces the link itself); the link's target is never written."""
    e = fake_env(env, home, delay_ms=150)
    secret = home / "outside.txt"
    secret.write_text("do not touch")
    out = home / "out" / "book.wav"

    def swap():
        out.symlink_to(secret)

    st = run_with_swap(e, home, voice_wav, out, swap, *(["--overwrite"] if overwrite else []))
    assert secret.read_text() == "do not touch"
    if overwrite:
        assert st["status"] == "finished", st
        assert not out.is_symlink() and out.read_bytes()[:4] == b"RIFF"
    else:
        assert st["status"] == "failed" and "was not written by narrate" in st["error"], st
        assert out.is_symlink()
    assert partials(home) == []


def test_root_parent_swapped_for_a_symlink_mid_job(env, home, voice_wav):
    base = home / "base"
    (base / "out").mkdir(parents=True)
    e = fake_env(env, home, delay_ms=150, NARRATE_OUTPUT_DIR=str(base / "out"))
    outside = home / "outside"
    (outside / "out").mkdir(parents=True)

    def swap():
        base.rename(home / "base.moved")
        base.symlink_to(outside)

    st = run_with_swap(e, home, voice_wav, base / "out" / "book.wav", swap)
    assert st["status"] == "failed" and "is no longer the directory it was when the job started" in st["error"], st
    assert files_under(outside) == [] and files_under(home / "base.moved") == []
    assert partials(home) == []


def test_long_output_name_works_and_too_long_is_refused_at_submit(env, home, voice_wav):
    """A name that fits NAME_MAX is narrated (temp names are short, not derived from it); a
    component over NAME_MAX or a path over PATH_MAX is a one-line error at submit."""
    e = fake_env(env, home, delay_ms=0)
    doc = home / "doc.txt"
    doc.write_text(book(6))
    long_name = "n" * 240 + ".mp3"
    job_id = submit(e, doc, voice_wav, home / "out" / long_name)
    proc = narrate(e, "worker", "--burst", "--quiet")
    assert proc.returncode == 0 and "Exception ignored" not in proc.stdout + proc.stderr, proc.stderr
    st = wait_for_job(job_id)
    assert st["status"] == "finished" and (home / "out" / long_name).exists(), st
    deep = home / "out" / "/".join(["d" * 200] * 25) / "x.mp3"
    for bad, what in ((home / "out" / ("n" * 300 + ".mp3"), "name"), (deep, "path")):
        proc = narrate(e, "submit", str(doc), "--voice", str(voice_wav), "-o", str(bad), "--json")
        assert proc.returncode != 0 and proc.stderr.startswith("Error: ") and f"{what} is too long" in proc.stderr, (
            proc.stderr
        )
        assert len(proc.stderr.strip().splitlines()) == 1
    assert partials(home) == [] and files_under(home / "out") == [long_name]
