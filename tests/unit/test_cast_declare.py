"""Declaring a cast (jobs.cast.declare): `--voice` arguments, cast.toml (relative files from its
folder, aliases, seeds), the two together, JSON round trips, and each refusal as one line."""

from __future__ import annotations

import pytest
from narrate.jobs.cast.declare import Cast, build_cast, parse_cast_toml, parse_voice_args, read_cast_file
from narrate.jobs.cast.reading import CastReading, make_reading
from narrate.jobs.errors import BadInput

TOML = """
narrator = "narrator.wav"   # a file next to the cast file

[voices]
Alice = "samples/alice.wav"
"alice:whisper" = "./alice-whisper.flac"
darcy = "darcy"             # a saved voice
bob = "ryan"                # a preset speaker
carol = "/abs/carol.wav"
dan = "~/dan.wav"

[aliases]
"Mr. Darcy" = "darcy"
"Fitzwilliam  Darcy" = "Darcy"

[seeds]
alice = 7
"alice:whisper" = 8
narrator = 1
"""


def test_voice_arguments():
    assert parse_voice_args(["./odd=name.wav"]).narrator == "./odd=name.wav"  # a path with "=": a plain voice
    with pytest.raises(BadInput, match="gives the narrator twice"):
        parse_voice_args(["me.wav", "./odd=name.wav"])
    cast = parse_voice_args(["me.wav", "Alice=a.wav", "alice:Whisper=w.wav", "bob=ryan"])
    assert cast == Cast("me.wav", {"alice": "a.wav", "alice:whisper": "w.wav", "bob": "ryan"})
    assert cast.members == ["alice", "bob"] and cast.variants == ["alice:whisper"]
    assert parse_voice_args(["narrator=me.wav"]).narrator == "me.wav"
    assert parse_voice_args(["narrator:soft=soft.wav"]).voices == {"narrator:soft": "soft.wav"}
    assert (cast.resolve("ALICE"), cast.resolve("/"), cast.resolve("Narrator"), cast.resolve("carol")) == (
        "alice",
        "narrator",
        "narrator",
        None,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["a.wav", "b.wav"],
            "--voice gives the narrator twice (a.wav and b.wav): give one plain --voice, and name "
            "the others (--voice alice=FILE|NAME)",
        ),
        (
            ["alice=a.wav", "ALICE=b.wav"],
            "alice is declared twice (--voice alice=a.wav and --voice ALICE=b.wav): keep one",
        ),
        (["alice="], "--voice alice= names no voice: write --voice alice=FILE|NAME"),
        (["alice:whisper=w.wav"], "--voice: the variant alice:whisper has no member alice: declare alice itself too"),
    ],
)
def test_bad_voice_arguments(args, says):
    with pytest.raises(BadInput) as e:
        parse_voice_args(args)
    assert str(e.value) == says


def test_cast_toml(tmp_path):
    path = tmp_path / "series" / "cast.toml"
    path.parent.mkdir()
    path.write_text(TOML)
    cast = read_cast_file(path)
    folder = path.parent
    assert cast.narrator == str(folder / "narrator.wav")
    assert cast.voices == {
        "alice": str(folder / "samples" / "alice.wav"),
        "alice:whisper": str(folder / "alice-whisper.flac"),
        "darcy": "darcy",
        "bob": "ryan",
        "carol": "/abs/carol.wav",
        "dan": "~/dan.wav",
    }
    assert cast.resolve("mr.   DARCY") == "darcy" == cast.resolve("fitzwilliam darcy")
    assert cast.seeds == {"alice": 7, "alice:whisper": 8, "narrator": 1} and cast.seed_of("bob") is None
    assert cast.voice_of("narrator") == cast.narrator and cast.by_voice("ryan") == "bob"
    assert Cast.from_json(cast.to_json()) == cast and hash(Cast.from_json(cast.to_json())) == hash(cast)
    reading = make_reading(cast, "lines", "alice:whisper", strict=True)
    assert CastReading.from_json(reading.to_json()) == reading


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[voices]\nalice = \n", "is not valid TOML: Invalid value (at line 2, column 9); fix that line"),
        ("[voices]\nalice = 'a.wav'\n[voice]\n", "unknown key 'voice': a cast has narrator, voices, aliases, seeds"),
        ("[voices]\nAlice = 'a.wav'\nalice = 'b.wav'\n", "alice is declared twice ('Alice' and 'alice'): keep one"),
        ("[voices]\nnarrator = 'a.wav'\n", "narrator is reserved: give the narrator's voice as narrator = FILE|NAME"),
        ("[voices]\n'Mr Darcy' = 'a.wav'\n", "'Mr Darcy' is not a cast name: use 1-64 letters, digits, '-' or '_'"),
        ("[voices]\nalice = 3\n", "alice = 3: give one voice, a sample file or a saved voice's name"),
        ("voices = 'alice'\n", "voices must be a table"),
        ("[voices]\n'bob:loud' = 'b.wav'\n", "the variant bob:loud has no member bob: declare bob itself too"),
        ("[aliases]\n'Al' = 'alice'\n", "alias 'Al' = 'alice' names no declared voice (declared: narrator)"),
        ("[voices]\nal = 'a'\n[aliases]\n'AL' = 'al'\n", "alias 'AL' is already a voice's name: remove the alias"),
        ("[voices]\nal = 'a'\n[aliases]\n'A l' = 'al'\n'a  L' = 'al'\n", "alias 'a  L' is declared twice"),
        ("[voices]\nal = 'a'\n[aliases]\n'[al]' = 'al'\n", "alias '[al]' is not usable"),
        ("[voices]\nal = 'a'\n[seeds]\nbo = 1\n", "seeds.bo names no declared voice (declared: narrator, al)"),
        ("[voices]\nal = 'a'\n[seeds]\nal = -1\n", "seeds.al = -1: a seed is a whole number from 0 to 4294967295"),
        ("[voices]\nal = 'a'\n[seeds]\nal = true\n", "seeds.al = True: a seed is a whole number"),
    ],
)
def test_bad_cast_files(text, says):
    with pytest.raises(BadInput) as e:
        parse_cast_toml(text, "cast.toml")
    assert str(e.value).startswith("cast.toml") and says in str(e.value) and "\n" not in str(e.value)


def test_a_cast_file_and_voice_arguments_together(tmp_path):
    path = tmp_path / "cast.toml"
    path.write_text("[voices]\nalice = 'a.wav'\n[aliases]\n'Al' = 'alice'\n")
    cast = build_cast(["me.wav", "bob=b.wav", "alice:shout=s.wav"], path)
    assert cast.narrator == "me.wav" and cast.voices == {
        "alice": str(tmp_path / "a.wav"),
        "bob": "b.wav",
        "alice:shout": "s.wav",
    }
    with pytest.raises(
        BadInput, match=r"^alice is declared twice \(--voice alice=x.wav and in .*cast.toml\): keep one"
    ):
        build_cast(["alice=x.wav"], path)
    path.write_text("narrator = 'n.wav'\n")
    with pytest.raises(
        BadInput, match=r"^the narrator is declared twice \(--voice me.wav and narrator = '.*n.wav' in "
    ):
        build_cast(["me.wav"], path)
    with pytest.raises(BadInput, match=r"^cast file .*missing.toml does not exist"):
        build_cast([], tmp_path / "missing.toml")
    (tmp_path / "latin1.toml").write_bytes(b"[voices]\nalice = '\xe9.wav'\n")
    with pytest.raises(BadInput, match="is not UTF-8 text"):
        build_cast([], tmp_path / "latin1.toml")


def test_the_dialogue_voice():
    cast = parse_voice_args(["alice=a.wav", "dialogue=d.wav"])
    assert make_reading(cast, dialogue_voice="Alice").dialogue == "alice"
    assert make_reading(cast, dialogue_voice="dialogue").dialogue == "dialogue"
    with pytest.raises(BadInput, match="the cast already has a member named dialogue"):
        make_reading(cast, dialogue_voice="other.wav")
    reading = make_reading(parse_voice_args([]), dialogue_voice="gran")
    assert reading.dialogue == "dialogue" and reading.cast.voices == {"dialogue": "gran"}
    with pytest.raises(BadInput, match="--markup 'yaml': use one of narrate"):
        make_reading(cast, "yaml")
