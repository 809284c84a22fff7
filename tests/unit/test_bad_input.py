"""Bad input: a one-line error naming the problem, a non-zero exit, nothing enqueued or stored."""

from __future__ import annotations

import os

import pytest
from helpers.audio import write_voice
from helpers.cli import invoke


@pytest.fixture
def good(home, voice_wav):
    doc = home / "ok.txt"
    doc.write_text("A fine sentence.")
    return {"doc": doc, "voice": voice_wav, "out": home / "out" / "ok.mp3"}


def bad_cases(home, good):
    empty = home / "empty.txt"
    empty.write_text("  \n\n \t\n")
    binary = home / "binary.txt"
    binary.write_bytes(b"\x7fELF\x02\x01\x00\x00" + bytes(range(256)))
    latin1 = home / "latin1.txt"
    latin1.write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    punct = home / "punct.txt"
    punct.write_text("*** --- ...\n\n!!!")
    notaudio = home / "voice.wav"
    notaudio.write_text("this is not audio")
    emptyvoice = home / "empty.wav"
    emptyvoice.write_bytes(b"")
    unreadable = home / "secret.wav"
    unreadable.write_bytes(good["voice"].read_bytes())
    unreadable.chmod(0)
    silent = write_voice(home / "silent.wav", amplitude=0)
    short = write_voice(home / "short.wav", seconds=0.5)
    long = write_voice(home / "long.wav", seconds=61)
    d, v, o = str(good["doc"]), str(good["voice"]), str(good["out"])
    return {
        "missing document": (["submit", str(home / "nope.txt"), "--voice", v, "-o", o], "does not exist"),
        "empty document": (["submit", str(empty), "--voice", v, "-o", o], "no text to narrate"),
        "binary document": (["submit", str(binary), "--voice", v, "-o", o], "NUL bytes"),
        "non-UTF-8 document": (["submit", str(latin1), "--voice", v, "-o", o], "iconv -f LATIN1 -t UTF-8"),
        "punctuation only": (["submit", str(punct), "--voice", v, "-o", o], "no text to narrate"),
        "document is a dir": (["submit", str(home), "--voice", v, "-o", o], "is not a regular file"),
        "missing voice": (["submit", d, "--voice", str(home / "nope.wav"), "-o", o], "does not exist"),
        "empty voice": (["submit", d, "--voice", str(emptyvoice), "-o", o], "is empty"),
        "voice not audio": (["submit", d, "--voice", str(notaudio), "-o", o], "not audio ffmpeg can read"),
        "unreadable voice": (["submit", d, "--voice", str(unreadable), "-o", o], "not readable"),
        "silent voice": (["submit", d, "--voice", str(silent), "-o", o], "is silent"),
        "short voice": (["submit", d, "--voice", str(short), "-o", o], "give at least 1 s"),
        "long voice": (["submit", d, "--voice", str(long), "-o", o], "longer than 60 s"),
        "unknown quant": (["submit", d, "--voice", v, "-o", o, "--quant", "3bit"], "--quant '3bit': use"),
        "unknown format": (["submit", d, "--voice", v, "-o", str(home / "out" / "x.xyz")], "unknown format"),
        "unwritable output": (
            ["submit", d, "--voice", v, "-o", str(home / "out" / "ro" / "x.mp3")],
            "cannot be written",
        ),
        "outside root": (["submit", d, "--voice", v, "-o", "/tmp/elsewhere.mp3"], "outside the output"),
        "output escapes by ..": (
            ["submit", d, "--voice", v, "-o", str(home / "out" / ".." / "x.mp3")],
            "outside the output root",
        ),
    }


def test_each_bad_input_is_one_clear_line_and_enqueues_nothing(env, home, good, external_redis):
    ro = home / "out" / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if os.geteuid() == 0:  # root ignores permission bits: make the directory a file instead
        ro.chmod(0o700)
        ro.rmdir()
        ro.write_text("a file where a directory should be")
    seen = {}
    for name, (args, message) in bad_cases(home, good).items():
        if name == "unreadable voice" and os.geteuid() == 0:
            continue  # root reads anything
        proc = invoke(env, *args)
        err = proc.stderr.strip()
        assert proc.returncode != 0, name
        assert message in err, (name, err)
        assert len(err.splitlines()) == 1 and err.startswith("Error: "), (name, err)
        seen[name] = err
    assert external_redis.dbsize() == 0  # nothing enqueued, nothing stored
    assert list((home / "out").iterdir()) == [ro]
    print("\n".join(f"{k}: {v}" for k, v in seen.items()))


def test_redis_that_does_not_answer(env, good):
    env = dict(env, NARRATE_REDIS_URL="redis://:hunter2@127.0.0.1:1/0")
    proc = invoke(env, "submit", str(good["doc"]), "--voice", str(good["voice"]), "-o", str(good["out"]))
    err = proc.stderr.strip()
    assert proc.returncode != 0 and "did not answer" in err and len(err.splitlines()) == 1, err
    assert "hunter2" not in err and "***" in err  # the password is never printed


def test_bad_max_frames_setting(env, good):
    env = dict(env, NARRATE_MAX_FRAMES="lots")
    proc = invoke(env, "submit", str(good["doc"]), "--voice", str(good["voice"]), "-o", str(good["out"]))
    assert proc.returncode != 0 and "NARRATE_MAX_FRAMES='lots' is not a whole number" in proc.stderr
