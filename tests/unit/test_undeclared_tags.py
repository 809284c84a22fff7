"""A bracket that looks like a cast tag but names no declared voice (`[Mr. Darcy]` with no such alias,
`[alice]` with no cast) is read aloud as text, as before, and `submit` says so on stderr: the tag, the
line it is on, and how to declare it (docs/cast.md)."""

from __future__ import annotations

import json

from helpers.cli import invoke
from narrate.jobs.cast.markup import looks_like_tag

BOOK = 'Chapter 1\n\nShe looked up.\n\n[Mr. Darcy] "I am come to speak."\n\nFootnote [1] and \\[Bingley] stay text.\n'


def test_an_alias_shaped_bracket_looks_like_a_tag():
    assert looks_like_tag("Mr. Darcy") and looks_like_tag("Lady Catherine") and looks_like_tag("alice")
    assert not looks_like_tag("1") and not looks_like_tag("see page 4") and not looks_like_tag("a long aside")


def test_submit_warns_of_an_undeclared_tag_naming_it_and_its_line(env, home, voice_wav, external_redis):
    doc = home / "pride.txt"
    doc.write_text(BOOK)
    ran = invoke(env, "submit", str(doc), "--voice", str(voice_wav), "--json")
    assert ran.returncode == 0, ran.stderr
    json.loads(ran.stdout)  # stdout stays JSON
    warned = [line for line in ran.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 1, ran.stderr
    line = warned[0]
    assert line.startswith("warning: pride.txt line 5: [Mr. Darcy] names no voice"), line
    assert "read aloud as text" in line and '[aliases] "Mr. Darcy" = "NAME"' in line and "docs/cast.md" in line
    job = external_redis.keys("rq:job:*")
    assert len(job) == 1  # still submitted, the tag read as text


def test_submit_with_a_cast_warns_of_a_tag_the_cast_does_not_declare(env, home, voice_wav, external_redis):
    doc = home / "pride.txt"
    doc.write_text(BOOK.replace("She looked up.", "[jane] She looked up."))
    ran = invoke(env, "submit", str(doc), "--voice", str(voice_wav), "--voice", f"jane={voice_wav}")
    assert ran.returncode == 0, ran.stderr
    warned = [line for line in ran.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 1 and warned[0].startswith(
        "warning: pride.txt line 5: [Mr. Darcy] names no voice of the cast"
    )
    doc.write_text("[bob] Hello there.\n")
    ran = invoke(env, "submit", str(doc), "--voice", str(voice_wav), "--voice", f"jane={voice_wav}")
    assert "warning: pride.txt line 1: [bob] names no voice of the cast" in ran.stderr
    assert "declare it (--voice bob=VOICE; see docs/cast.md)" in ran.stderr
