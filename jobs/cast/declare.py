"""Declaring a cast: the narrator, members (`alice -> voice`), variants (`alice:whisper -> voice`),
aliases (`"Mr. Darcy" -> darcy`) and per-voice seeds, from repeated `--voice` arguments and/or a
`cast.toml` file. A voice is kept as the string the person gave (a sample file, a saved voice's
name or a preset speaker), to be resolved by jobs.voices.choice when a job is submitted; a relative
file in a cast.toml is taken from the file's folder. Every refusal is one BadInput line.

cast.toml:

    narrator = "me.wav"              # optional: the narrator's voice (else the job's --voice)
    [voices]
    alice = "alice-sample.wav"       # a file (from this file's folder), a saved voice or a preset
    "alice:whisper" = "alice-whisper.wav"
    [aliases]
    "Mr. Darcy" = "darcy"
    [seeds]
    alice = 7
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from narrate.jobs.documents.voicing import NARRATOR
from narrate.jobs.errors import BadInput
from narrate.jobs.inputs import read_input

# A voice name's rule (jobs.voices.names.NAME; jobs/cast comes before jobs/voices, so it is copied).
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
LABEL = re.compile(rf"(?P<member>{NAME.pattern})(?::(?P<variant>{NAME.pattern}))?")
TOP_KEYS = ("narrator", "voices", "aliases", "seeds")
MAX_VOICES = 100
MAX_ALIASES = 1000
MAX_ALIAS_CHARS = 100
MAX_SEED = 2**32 - 1
MAX_CAST_BYTES = 1024 * 1024
_SPACES = re.compile(r"\s+")


def alias_key(text: str) -> str:
    """How an alias or a tag is compared: spaces collapsed, case folded."""
    return _SPACES.sub(" ", text).strip().casefold()


@dataclass(frozen=True)
class Cast:
    """A narrator and the voices of a book's characters. `voices`: label -> voice argument, labels
    being members (`alice`) and variants (`alice:whisper`, a member's other sample), lower case, in
    the order they were declared. `narrator`: the narrator's voice argument, None for the job's own
    `--voice`. `aliases`: name as written -> label. `seeds`: label (or "narrator") -> seed."""

    narrator: str | None = None
    voices: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    seeds: dict[str, int] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.narrator, *self.voices.items(), *self.aliases.items(), *self.seeds.items()))

    @property
    def members(self) -> list[str]:
        return [label for label in self.voices if ":" not in label]

    @property
    def variants(self) -> list[str]:
        return [label for label in self.voices if ":" in label]

    @cached_property
    def _lookup(self) -> dict[str, str]:
        found = {alias_key(a): label for a, label in self.aliases.items()}
        return found | {label: label for label in self.voices} | {NARRATOR: NARRATOR, "/": NARRATOR}

    def resolve(self, word: str) -> str | None:
        """The label a tag's word names (`Alice`, `alice:Whisper`, `Mr. Darcy`, `narrator`, `/`), or None."""
        return self._lookup.get(alias_key(word))

    def by_voice(self, voice: str) -> str | None:
        """The label declared with this exact voice argument (another tool's tag may name a file)."""
        if self.narrator is not None and voice.strip() == self.narrator:
            return NARRATOR
        return next((label for label, arg in self.voices.items() if arg == voice.strip()), None)

    def voice_of(self, label: str) -> str | None:
        """The voice argument of a label; the narrator's may be None (the job's own --voice)."""
        return self.narrator if label == NARRATOR else self.voices[label]

    def seed_of(self, label: str) -> int | None:
        return self.seeds.get(label)

    def with_voice(self, label: str, voice: str) -> Cast:
        return Cast(self.narrator, self.voices | {label: voice}, self.aliases, self.seeds)

    def to_json(self) -> dict[str, Any]:
        """The cast.toml schema as JSON (absolute paths: what it was read from no longer matters)."""
        return {"narrator": self.narrator, "voices": self.voices, "aliases": self.aliases, "seeds": self.seeds}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Cast:
        """What to_json wrote, checked as a cast.toml is (BadInput)."""
        return _checked(data, "the stored cast", None)


def parse_voice_args(args: Iterable[str]) -> Cast:
    """`--voice X` (no `=`: the narrator), `--voice alice=FILE|NAME`, `--voice alice:whisper=FILE`."""
    return _checked(_from_args(args), "--voice", None)


def _from_args(args: Iterable[str]) -> dict[str, Any]:
    narrator: str | None = None
    voices: dict[str, str] = {}
    for arg in args:
        name, sep, value = arg.partition("=")
        if not sep or not LABEL.fullmatch(name.strip().lower()):  # a path may hold "=": a plain voice
            name, value = NARRATOR, arg
        label = name.strip().lower()
        if not value.strip():
            raise BadInput(f"--voice {arg} names no voice: write --voice {label}=FILE|NAME")
        if label == NARRATOR:
            if narrator is not None:
                raise BadInput(
                    f"--voice gives the narrator twice ({narrator} and {value}): give one plain --voice, and name "
                    "the others (--voice alice=FILE|NAME)"
                )
            narrator = value.strip()
            continue
        if label in voices:
            raise BadInput(f"{label} is declared twice (--voice {label}={voices[label]} and --voice {arg}): keep one")
        voices[label] = value.strip()
    return {"narrator": narrator, "voices": voices}


def read_cast_file(path: Path) -> Cast:
    """A cast.toml (see the module's docstring); relative files are taken from its folder."""
    path = Path(path)
    raw = read_input(path, f"cast file {path}", MAX_CAST_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"cast file {path} is not UTF-8 text: save it as UTF-8") from None
    return parse_cast_toml(text, str(path), path.resolve().parent)


def parse_cast_toml(text: str, origin: str = "cast.toml", folder: Path | None = None) -> Cast:
    """A cast.toml's text; `folder`: where its relative files are (None: kept as written)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        where = str(e).splitlines()[0] if str(e) else "it does not parse"
        fix = "fix that line" if "line" in where else "finish it (a value is missing at its end)"
        raise BadInput(f"{origin} is not valid TOML: {where}; {fix}") from None
    return _checked(data, origin, folder)


def build_cast(voice_args: Iterable[str] = (), cast_file: Path | None = None) -> Cast:
    """The cast of `--cast FILE` and the `--voice` arguments together; a voice both declare is refused."""
    given = _from_args(voice_args)
    if cast_file is None:
        return _checked(given, "--voice", None)
    filed = read_cast_file(cast_file)
    if given["narrator"] is not None and filed.narrator is not None:
        raise BadInput(
            f"the narrator is declared twice (--voice {given['narrator']} and narrator = {filed.narrator!r} in "
            f"{cast_file}): keep one"
        )
    twice = [label for label in given["voices"] if label in filed.voices]
    if twice:
        raise BadInput(
            f"{twice[0]} is declared twice (--voice {twice[0]}={given['voices'][twice[0]]} and in {cast_file}): "
            "keep one"
        )
    merged = {
        "narrator": given["narrator"] if given["narrator"] is not None else filed.narrator,
        "voices": filed.voices | given["voices"],
        "aliases": filed.aliases,
        "seeds": filed.seeds,
    }
    return _checked(merged, f"{cast_file} with --voice", None)


def _checked(data: dict[str, Any], origin: str, folder: Path | None) -> Cast:
    """A Cast from cast.toml-shaped data: every key, label, alias and seed checked (BadInput)."""
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise BadInput(f"{origin}: unknown key {unknown[0]!r}: a cast has {', '.join(TOP_KEYS)}")
    narrator = data.get("narrator")
    if narrator is not None:
        narrator = _voice(narrator, "narrator", origin, folder)
    voices: dict[str, str] = {}
    spelled: dict[str, str] = {}
    for key, value in _table(data, "voices", origin).items():
        label = _label(key, origin)
        if label in voices:
            raise BadInput(f"{origin}: {label} is declared twice ({spelled[label]!r} and {key!r}): keep one")
        voices[label] = _voice(value, label, origin, folder)
        spelled[label] = key
    if len(voices) > MAX_VOICES:
        raise BadInput(f"{origin} declares {len(voices)} voices; a cast has at most {MAX_VOICES}")
    for label in voices:
        member = label.partition(":")[0]
        if ":" in label and member != NARRATOR and member not in voices:
            raise BadInput(f"{origin}: the variant {label} has no member {member}: declare {member} itself too")
    aliases = _aliases(_table(data, "aliases", origin), voices, origin)
    seeds: dict[str, int] = {}
    for key, seed in _table(data, "seeds", origin).items():
        label = key.strip().lower()
        if label != NARRATOR and label not in voices:
            raise BadInput(f"{origin}: seeds.{key} names no declared voice (declared: {_names(voices)})")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise BadInput(f"{origin}: seeds.{key} = {seed!r}: a seed is a whole number from 0 to {MAX_SEED}")
        seeds[label] = seed
    return Cast(narrator, voices, aliases, seeds)


def _table(data: dict[str, Any], key: str, origin: str) -> dict[str, Any]:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise BadInput(f"{origin}: {key} must be a table ([{key}] with one `name = value` a line)")
    return value


def _label(key: str, origin: str) -> str:
    label = key.strip().lower()
    if not LABEL.fullmatch(label):
        raise BadInput(
            f"{origin}: {key!r} is not a cast name: use 1-64 letters, digits, '-' or '_' (a variant: alice:whisper)"
        )
    if label == NARRATOR:
        raise BadInput(f"{origin}: narrator is reserved: give the narrator's voice as narrator = FILE|NAME")
    return label


def _voice(value: Any, label: str, origin: str, folder: Path | None) -> str:
    """A voice argument as given; a relative file (it has a suffix or a slash, or starts with '.')
    from `folder`. A bare word (`darcy`, `ryan`) is a saved voice or a preset speaker's name."""
    if not isinstance(value, str) or not value.strip() or "\n" in value:
        raise BadInput(f"{origin}: {label} = {value!r}: give one voice, a sample file or a saved voice's name")
    text = value.strip()
    is_path = "/" in text or os.sep in text or text.startswith((".", "~")) or bool(Path(text).suffix)
    if folder is not None and is_path and not text.startswith("~") and not os.path.isabs(text):
        return os.path.normpath(os.path.join(folder, text))
    return text


def _aliases(table: dict[str, Any], voices: dict[str, str], origin: str) -> dict[str, str]:
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    if len(table) > MAX_ALIASES:
        raise BadInput(f"{origin} has {len(table)} aliases; a cast has at most {MAX_ALIASES}")
    for alias, target in table.items():
        key = alias_key(alias)
        if not key or len(key) > MAX_ALIAS_CHARS or not re.search(r"\w", key) or re.search(r"[\[\]<>]", key):
            raise BadInput(f"{origin}: alias {alias!r} is not usable: 1-{MAX_ALIAS_CHARS} characters, no brackets")
        label = target.strip().lower() if isinstance(target, str) else ""
        if label != NARRATOR and label not in voices:
            raise BadInput(
                f"{origin}: alias {alias!r} = {target!r} names no declared voice (declared: {_names(voices)})"
            )
        if key in voices or key == NARRATOR:
            raise BadInput(f"{origin}: alias {alias!r} is already a voice's name: remove the alias")
        if key in seen:
            raise BadInput(f"{origin}: alias {alias!r} is declared twice ({seen[key]!r} too): keep one")
        seen[key] = alias
        out[alias] = label
    return out


def _names(voices: dict[str, str]) -> str:
    return ", ".join([NARRATOR, *voices][:12])
