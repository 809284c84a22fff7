"""A bad --lexicon or --language is a one-line error at submit and nothing is queued."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import invoke


def spoken(home: Path) -> list[dict]:
    log = home / "text.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_bad_lexicon_or_language_is_a_one_line_error_and_nothing_is_queued(env, home, voice_wav, external_redis):
    doc = home / "a.txt"
    doc.write_text("Hello there.\n")
    lexicon = home / "lex.txt"
    lexicon.write_text("Nguyen = Win\nno separator here\n")
    for extra, message in [
        (["--lexicon", str(lexicon)], f"Error: lexicon {lexicon} line 2: expected 'word = spoken form'"),
        (["--lexicon", str(home / "missing.txt")], "does not exist"),
        (["--language", "klingon"], "Error: --language: unknown language 'klingon': use auto or one of"),
    ]:
        proc = invoke(env, "submit", str(doc), "--voice", str(voice_wav), *extra)
        assert proc.returncode != 0
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], proc.stderr
    assert not external_redis.keys("rq:job:*")
