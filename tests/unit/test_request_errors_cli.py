"""`narrate submit` names the flag a refused value came in, as the command line spells it (the request model's
validators word it; nothing is rewritten afterwards), and enqueues nothing: the quantization, the language, a
feed's name, the dialogue voice, and what two options refuse together (the read-along book and chapter files)."""

from __future__ import annotations

import pytest
from helpers.cli import invoke


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--quant", "bogus"], "--quant 'bogus': use 'bf16'"),
        (["--language", "klingon"], "--language: unknown language 'klingon'"),
        (["--feed", "bad/name"], "--feed: feed name 'bad/name' is not valid"),
        (["--dialogue-voice", "nosuch"], "--dialogue-voice 'nosuch': "),
        (
            ["--readalong", "manifest", "--split", "chapters"],
            "Error: --readalong: a read-along book plays the whole book's file; not with --split chapters",
        ),
        (["--in", "abc"], "--in 'abc' is not a delay"),
        (["--format", "epub", "--split", "chapters+book"], "an EPUB output (--format epub)"),
    ],
)
def test_a_refused_value_names_its_flag(env, home, voice_wav, args, says):
    doc = home / "b.txt"
    doc.write_text("One sentence here. And another one.")
    ran = invoke(env, "submit", str(doc), "--voice", str(voice_wav), *args)
    assert ran.returncode == 1 and says in ran.stderr, ran.stderr
    assert "--title" not in ran.stderr
    listed = invoke(env, "list", "--json")
    assert listed.returncode == 0 and '"id"' not in listed.stdout, listed.stdout
