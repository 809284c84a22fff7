"""Where outputs go, one rule: under the output root, a relative -o taken from the output root
(not from the current directory), the default <output root>/<document stem>.mp3; `run` writes
where -o points, from the current directory (that file's directory is its output root)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import invoke


def submitted(env, doc: Path, voice: Path, *args: str, cwd: Path) -> dict:
    proc = invoke(env, "submit", str(doc), "--voice", str(voice), "--json", *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_submit_outputs_are_taken_from_the_output_root_wherever_it_runs(env, home, voice_wav, tmp_path, external_redis):
    root = home / "out"
    elsewhere = tmp_path / "work"  # the current directory, outside the output root
    elsewhere.mkdir()
    inside = root / "inbox"  # and one inside it
    inside.mkdir()
    doc = elsewhere / "Chapter One.txt"
    doc.write_text("A fine sentence.")
    assert submitted(env, doc, voice_wav, cwd=elsewhere)["output"] == str(root / "Chapter One.mp3")
    assert submitted(env, doc, voice_wav, "-o", "x.m4b", cwd=elsewhere)["output"] == str(root / "x.m4b")
    assert submitted(env, doc, voice_wav, "-o", "books/x.m4b", cwd=inside)["output"] == str(root / "books" / "x.m4b")
    absolute = str(root / "inbox" / "y.mp3")
    assert submitted(env, doc, voice_wav, "-o", absolute, cwd=elsewhere)["output"] == absolute
    assert not any(elsewhere.glob("*.m*")) and not (inside / "books").exists()  # nothing made at submit


def test_a_path_outside_the_root_is_refused_saying_the_rule(env, home, voice_wav, tmp_path, external_redis):
    root = home / "out"
    doc = tmp_path / "doc.txt"
    doc.write_text("A fine sentence.")
    for out in [str(tmp_path / "x.mp3"), "../x.mp3"]:
        proc = invoke(env, "submit", str(doc), "--voice", str(voice_wav), "-o", out, cwd=tmp_path)
        err = proc.stderr.strip()
        assert proc.returncode == 1 and len(err.splitlines()) == 1, err
        assert f"is outside the output root {root}" in err, err
        assert f"a relative -o is taken from the output root (-o book.mp3 writes {root / 'book.mp3'})" in err, err
        assert "NARRATE_OUTPUT_DIR" in err, err
    assert external_redis.dbsize() == 0


def test_submit_says_where_the_output_will_be(env, home, voice_wav, tmp_path, external_redis):
    doc = tmp_path / "doc.txt"
    doc.write_text("A fine sentence.")
    proc = invoke(env, "submit", str(doc), "--voice", str(voice_wav), cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("narrate-"), proc.stderr
    assert f"output: {home / 'out' / 'doc.mp3'}" in proc.stderr, proc.stderr


def test_several_documents_follow_the_same_rule(env, home, voice_wav, tmp_path, external_redis):
    """With several documents, no -o puts each output in the output root, and a relative -o
    directory is taken from the root too (not from the current directory)."""
    root = home / "out"
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    docs = []
    for name in ("one", "two"):
        doc = elsewhere / f"{name}.txt"
        doc.write_text(f"The {name} document.")
        docs.append(str(doc))

    def outputs(*args: str) -> list[str]:
        proc = invoke(env, "submit", *docs, "--voice", str(voice_wav), "--json", *args, cwd=elsewhere)
        assert proc.returncode == 0, proc.stderr
        return [json.loads(line)["output"] for line in proc.stdout.splitlines()]

    assert outputs() == [str(root / "one.mp3"), str(root / "two.mp3")]
    assert outputs("-o", "books/", "--format", "m4b") == [
        str(root / "books" / "one.m4b"),
        str(root / "books" / "two.m4b"),
    ]
    assert not list(elsewhere.glob("*.m*")) and not (elsewhere / "books").exists()
