"""The importers of other tools' markup (`--markup e2a|abogen|jsonl|lines`, jobs.cast.importers): each
into the same per-sentence voices, chapters kept, brackets of the book read as text, a speaker the
cast lacks read by the narrator and reported, and a line an importer cannot read one error naming
its number."""

from __future__ import annotations

import json

import pytest
from narrate.jobs.cast.declare import parse_cast_toml
from narrate.jobs.cast.reading import make_reading, read_cast
from narrate.jobs.errors import BadInput

CAST = parse_cast_toml(
    '[voices]\nalice = "/voices/alice.wav"\nbob = "/voices/bob.wav"\ndarcy = "darcy"\n'
    '[aliases]\n"Mr. Darcy" = "darcy"\n"af_heart" = "alice"'
)


def read(tmp_path, markup: str, text: str, name: str = "book.txt", **how):
    path = tmp_path / name
    path.write_text(text)
    doc, report = read_cast(path, make_reading(CAST, markup=markup, **how))
    return list(zip(doc.sentence_voices, doc.sentences, strict=True)), doc.chapters, report.unknown


def refused(tmp_path, markup: str, text: str) -> str:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(BadInput) as e:
        read_cast(path, make_reading(CAST, markup=markup))
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{path}: line ")
    return message


def test_e2a_voice_blocks_across_paragraphs(tmp_path):
    text = (
        "# Chapter 1\n\n"
        'It began. [voice:/voices/alice.wav]"We should leave," she said.\n\n'
        "Still alice here. [pause:2] On [Fireball]. [/voice] The narrator again.\n\n"
        "[voice:bob.wav]Bob, by the file's stem.[/voice] [break] [voice:/nobody.wav]Who?[/voice]\n"
    )
    got, chapters, unknown = read(tmp_path, "e2a", text)
    assert got == [
        ("narrator", "Chapter 1"),
        ("narrator", "It began."),
        ("alice", '"We should leave," she said.'),
        ("alice", "Still alice here."),
        ("alice", "On [Fireball]."),
        ("narrator", "The narrator again."),
        ("bob", "Bob, by the file's stem."),
        ("narrator", "Who?"),
    ]
    assert chapters == [(0, "Chapter 1")] and unknown == {"[voice:/nobody.wav]": 1}


def test_e2a_bad_lines(tmp_path):
    message = refused(tmp_path, "e2a", "Fine.\n\n[voice:]Empty.[/voice]\n")
    assert message.endswith(
        "line 3 ('[voice:]Empty.[/voice]') has an empty [voice:]: name a voice, [voice:NAME]...[/voice]"
    )
    assert "line 2 " in refused(tmp_path, "e2a", "Fine.\n[voice:/voices/alice.wav Hi.\n")


def test_abogen_voices_last_until_the_next_marker_or_chapter(tmp_path):
    text = (
        "<<METADATA_TITLE:The Trip>>\n<<CHAPTER_MARKER:Departure>>\n"
        "<<VOICE:af_heart>>“Ready?” she asked.\n\n"
        "Still her. <<VOICE:bob>>Yes. <<VOICE:narrator>>They left.\n\n"
        "<<CHAPTER_MARKER:Arrival>>\nThe narrator, at a new chapter. <<VOICE:am_adam>>Unknown.\n"
    )
    got, chapters, unknown = read(tmp_path, "abogen", text)
    assert got == [
        ("narrator", "Departure"),
        ("alice", "“Ready?” she asked."),
        ("alice", "Still her."),
        ("bob", "Yes."),
        ("narrator", "They left."),
        ("narrator", "Arrival"),
        ("narrator", "The narrator, at a new chapter."),
        ("narrator", "Unknown."),
    ]
    assert chapters == [(0, "Departure"), (3, "Arrival")] and unknown == {"<<VOICE:am_adam>>": 1}
    assert "line 2 " in refused(tmp_path, "abogen", "Fine.\n<<VOICE:>>Hi.\n")
    assert "line 1 " in refused(tmp_path, "abogen", "<<VOICE:alice Hi.\n")


def test_json_lines(tmp_path):
    rows = [
        {"chapter": "One"},
        {"speaker": None, "text": "The door opened."},
        {"speaker": "Alice", "text": "“Hello [there],” she said.\n\nA second paragraph."},
        {"speaker": "Mr. Darcy", "text": "Good evening."},
        {"speaker": "narrator", "text": "Chapter Two"},
        {"speaker": "carol", "text": "Nobody knows me."},
    ]
    got, chapters, unknown = read(tmp_path, "jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n", "b.jsonl")
    assert got == [
        ("narrator", "One"),
        ("narrator", "The door opened."),
        ("alice", "“Hello [there],” she said."),
        ("alice", "A second paragraph."),
        ("darcy", "Good evening."),
        ("narrator", "Chapter Two"),
        ("narrator", "Nobody knows me."),
    ]
    assert chapters == [(0, "One"), (5, "Chapter Two")] and unknown == {'"speaker": "carol"': 1}


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"speaker": "alice", "text": "Hi."', "is not JSON (Expecting ',' delimiter)"),
        ('["alice", "Hi."]', 'is not a {"speaker": "...", "text": "..."} object'),
        ('{"speaker": "alice"}', 'is not a {"speaker": "...", "text": "..."} object'),
        ('{"speaker": 7, "text": "Hi."}', "has a speaker, text or chapter that is not a string"),
    ],
)
def test_json_lines_bad_line(tmp_path, line, says):
    good = json.dumps({"speaker": "alice", "text": "Fine."})
    message = refused(tmp_path, "jsonl", f"{good}\n\n{line}\n{good}\n")
    assert ": line 3 (" in message and says in message, message


def test_name_colon_scripts(tmp_path):
    text = "# Act One\n\nNarrator: The stage is dark.\nAlice: Who's there?\n  Mr. Darcy : It is I.\nDave: Hi.\n"
    got, chapters, unknown = read(tmp_path, "lines", text)
    assert got == [
        ("narrator", "Act One"),
        ("narrator", "The stage is dark."),
        ("alice", "Who's there?"),
        ("darcy", "It is I."),
        ("narrator", "Hi."),
    ]
    assert chapters == [(0, "Act One")] and unknown == {"Dave:": 1}
    message = refused(tmp_path, "lines", "Alice: Hi.\n\nThis line names nobody\n")
    assert message.endswith(
        "line 3 ('This line names nobody') is not `Name: text`: give every line its speaker "
        "(Narrator: ... for narration)"
    )
    assert "line 1 " in refused(tmp_path, "lines", "Alice:\n")


def test_strict_refuses_an_importers_unknown_speaker(tmp_path):
    path = tmp_path / "script.txt"
    path.write_text("Alice: Hi.\nDave: Hello.\n")
    with pytest.raises(BadInput, match=r"tags name nobody in the cast: Dave:"):
        read_cast(path, make_reading(CAST, markup="lines", strict=True))
