"""`narrate cast DOC` (cli/cast.py) in this process: the voices, their sentences, time and first lines,
declared voices never used and tags that name nobody, as text and JSON, with no server; one-line
refusals (--strict, a cast.toml or an importer line that cannot be read); the one-line summary
`submit` prints; and `--draft`, which only ever adds tags."""

from __future__ import annotations

import json
import re

import pytest
from helpers.cli import invoke
from helpers.ops import one_error_line
from narrate.jobs.cast.declare import build_cast
from narrate.jobs.cast.reading import make_reading, read_cast
from narrate.jobs.cast.summary import cast_line, summarize_cast

BOOK = """# The Visit

[alice] "We should leave," she said. "Now."

The host smiled. [bob] "Stay a while." [/] Nobody moved. He cast [Fireball] twice [Fireball].

"Fine," said Alice. \\[sic] stays text.
"""


@pytest.fixture
def env(tmp_path):
    return {"NARRATE_HOME": str(tmp_path / "home")}  # no server is started: nothing here needs one


@pytest.fixture
def book(tmp_path):
    path = tmp_path / "visit.txt"
    path.write_text(BOOK)
    (tmp_path / "cast.toml").write_text("narrator = 'me.wav'\n[voices]\nalice = 'alice.wav'\ncarol = 'carol'\n")
    return path


def test_the_cast_as_text(env, book, tmp_path):
    ran = invoke(env, "cast", str(book), "--cast", str(tmp_path / "cast.toml"), "--voice", "bob=ryan")
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr
    assert ran.stdout.splitlines() == [
        "visit: 3 voices, 9 sentences, about 0:00:14",
        f"  narrator ({tmp_path / 'me.wav'}): 6 sentences, 0:00:09",
        "      The Visit",
        "      The host smiled.",
        "      Nobody moved.",
        f"  alice ({tmp_path / 'alice.wav'}): 2 sentences, 0:00:03",
        '      "We should leave," she said.',
        '      "Now."',
        "  bob (ryan): 1 sentence, 0:00:01",
        '      "Stay a while."',
        "never used: carol (carol)",
        "tags that name nobody (read as text): [Fireball] (2 times)",
    ]


def test_the_cast_as_json_with_a_dialogue_voice(env, book):
    ran = invoke(env, "cast", str(book), "--voice", "alice=a.wav", "--dialogue-voice", "alice", "--json")
    assert ran.returncode == 0, ran.stderr
    data = json.loads(ran.stdout)
    assert (data["document"], data["title"], data["markup"], data["dialogue"]) == (
        str(book),
        "visit",
        "narrate",
        "alice",
    )
    voices = {v["label"]: v for v in data["voices"]}
    assert list(voices) == ["narrator", "alice"] and voices["narrator"]["voice"] is None
    assert voices["narrator"]["first_lines"][-1] == '[bob] "Stay a while."'  # [/] is a tag: markup wins there
    assert voices["alice"]["sentences"] == 3 and voices["alice"]["first_lines"][-1] == '"Fine,"'
    assert data["sentences"] == sum(v["sentences"] for v in data["voices"]) == 10
    assert data["seconds"] == pytest.approx(sum(v["seconds"] for v in data["voices"]), abs=0.2)
    assert data["unused"] == [] and data["unknown_tags"] == {"[bob]": 1, "[Fireball]": 2}


def test_refusals_are_one_line(env, book, tmp_path):
    line = one_error_line(invoke(env, "cast", str(book), "--voice", "alice=a.wav", "--voice", "bob=b", "--strict"))
    assert line == (
        f"Error: {book}: tags name nobody in the cast: [Fireball] (2 times); declare them (--voice NAME=VOICE or "
        "cast.toml), write \\[ to keep a bracket as text, or leave out --strict"
    )
    bad = tmp_path / "bad.toml"
    bad.write_text("[voices]\nalice = 'a.wav\n")
    assert "is not valid TOML" in one_error_line(invoke(env, "cast", str(book), "--cast", str(bad)))
    script = tmp_path / "script.txt"
    script.write_text("Alice: Hi.\nno speaker here\n")
    line = one_error_line(invoke(env, "cast", str(script), "--voice", "alice=a.wav", "--markup", "lines"))
    assert line.startswith(f"Error: {script}: line 2 ('no speaker here') is not `Name: text`")
    assert "does not exist" in one_error_line(invoke(env, "cast", str(tmp_path / "none.txt")))
    ran = invoke(env, "cast", str(book), "--markup", "yaml")
    assert ran.returncode == 2 and "Invalid value for '--markup'" in ran.stderr


def test_the_one_line_summary_for_submit(book, tmp_path):
    cast = build_cast(["bob=ryan", "alice=a.wav", "carol=c.wav"])
    doc, report = read_cast(book, make_reading(cast))
    assert cast_line(doc, cast, report) == (
        "cast: narrator 6 sentences (0:00:09), alice 2 (0:00:03), bob 1 (0:00:01); never used: carol; "
        "tags that name nobody (read as text): [Fireball] (2 times)"
    )
    summary = summarize_cast(doc, cast, report, pause_s=1.0)
    assert summary.sentences == 9 and summary.voices[0].seconds > 6 + 5


def test_a_draft_only_adds_tags(env, tmp_path):
    text = (
        '"We should leave," Alice said. "Now."\n\n'
        "Bob asked, “Why?”\n\n"
        "“Because,” said Mr. Darcy, looking at [alice] and [Fireball].\n\n"
        '"Who knows," someone said.\n'
    )
    doc = tmp_path / "story.txt"
    doc.write_text(text)
    cast_file = tmp_path / "cast.toml"
    cast_file.write_text("[voices]\nalice = 'a'\nbob = 'b'\ndarcy = 'd'\n[aliases]\n'Mr. Darcy' = 'darcy'\n")
    out = tmp_path / "tagged.txt"
    ran = invoke(env, "cast", str(doc), "--cast", str(cast_file), "--draft", str(out))
    assert ran.returncode == 0, ran.stderr
    assert (
        ran.stdout.splitlines()[-1] == f"draft: {out} (3 quotes tagged; review it, then narrate it with the same cast)"
    )
    drafted = out.read_text()
    assert drafted == (
        '[alice]"We should leave,"[/] Alice said. "Now."\n\n'
        "Bob asked, [bob]“Why?”[/]\n\n"
        "[darcy]“Because,”[/] said Mr. Darcy, looking at \\[alice] and [Fireball].\n\n"
        '"Who knows," someone said.\n'
    )
    untagged = re.sub(r"(?<!\\)\[(alice|bob|darcy|/)\]", "", drafted)
    assert untagged.replace("\\[", "[") == text  # nothing but tags (and the escape of a tag-like bracket) added
    cast = build_cast([], cast_file)
    read, _ = read_cast(out, make_reading(cast))
    assert [v for v in read.sentence_voices if v != "narrator"] == ["alice", "bob", "darcy"]
    line = one_error_line(invoke(env, "cast", str(doc), "--cast", str(cast_file), "--draft", str(doc)))
    assert "is the document itself" in line
