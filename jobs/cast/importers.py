"""Other tools' markup (`--markup e2a|abogen|jsonl|lines`) rewritten into narrate's own, so that a
marked-up text is then read as any other: paragraphs and chapters found as before, tags removed
before sentences are split. Text files only (txt, md). Book text keeps every bracket as text (the
importer escapes them); a speaker the cast does not declare is read by the narrator and reported.

- `e2a` (ebook2audiobook): `[voice:NAME|PATH]...[/voice]`, across paragraphs; its `[pause]`,
  `[pause:N]` and `[break]` tags are removed.
- `abogen`: `<<VOICE:NAME>>` until the next one or the next `<<CHAPTER_MARKER:Title>>` (a chapter);
  other `<<KEY:value>>` markers are removed.
- `jsonl`: one JSON object a line, `{"speaker": "alice", "text": "..."}` (speaker null, "" or
  "narrator": the narrator); `{"chapter": "Title"}` starts a chapter. Each line is a paragraph.
- `lines`: a script, `Name: text` a line, each line a paragraph; `# Title` lines are chapters.

A speaker is the cast's name or alias for it, else the member declared with that very voice
argument (a tag that names a file), else the member named as the file's stem (`alice.wav`). A line
an importer cannot read is one BadInput naming its number."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

from narrate.jobs.cast.declare import Cast
from narrate.jobs.cast.markup import escape, tag
from narrate.jobs.documents.voicing import NARRATOR
from narrate.jobs.errors import BadInput

IMPORTERS = ("e2a", "abogen", "jsonl", "lines")
_E2A_TAG = re.compile(r"\[(?:voice:(?P<voice>[^\]\n]*)|(?P<end>/voice)|pause(?::[^\]\n]*)?|break)\]", re.I)
_E2A_OPEN = re.compile(r"\[(voice:|/voice)", re.I)
_ABOGEN_TAG = re.compile(r"<<(?P<key>[A-Z][A-Z_]*):(?P<value>[^<>\n]*)>>")
_ABOGEN_OPEN = re.compile(r"<<(VOICE|CHAPTER_MARKER):")
_SCRIPT_LINE = re.compile(r"(?P<name>[^:\[\]<>\"“”«»]{1,64}?)\s*:\s*(?P<text>.*)")
_MD_HEADING = re.compile(r"#{1,6}\s")
_MD_PREFIX = re.compile(r"(#{1,6}\s+|>\s*|[-*+]\s+)?")
_HAS_WORD = re.compile(r"\w")

Unknown = list[str]


def import_markup(kind: str, text: str, cast: Cast, origin: str) -> tuple[str, Unknown]:
    """`text` in another tool's markup as narrate's markup, and the speakers it names that the
    cast does not declare (as written in the text)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    importer: Callable[[list[str], Cast, str], tuple[list[str], Unknown]] = {
        "e2a": _e2a,
        "abogen": _abogen,
        "jsonl": _jsonl,
        "lines": _lines,
    }[kind]
    out, unknown = importer(lines, cast, origin)
    return "\n".join(out), unknown


def speaker(word: str, cast: Cast) -> str | None:
    """The label a speaker's name or voice names (see the module's docstring); None: nobody."""
    word = word.strip()
    if not word or word.lower() == NARRATOR:
        return NARRATOR
    found = cast.resolve(word) or cast.by_voice(word)
    if found is None and ("/" in word or os.sep in word or PurePath(word).suffix):
        full = os.path.abspath(os.path.expanduser(word))
        found = next((lb for lb, arg in cast.voices.items() if os.path.abspath(os.path.expanduser(arg)) == full), None)
        found = found or cast.resolve(PurePath(word).stem)
    return found


def _bad(origin: str, n: int, line: str, why: str) -> BadInput:
    shown = line.strip()
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return BadInput(f"{origin}: line {n} ({shown!r}) {why}")


def _start(line: str, label: str) -> str:
    """A paragraph's first line, switched to `label` after any Markdown prefix (not a heading's)."""
    if label == NARRATOR or _MD_HEADING.match(line.lstrip()):
        return line
    prefix = _MD_PREFIX.match(line.lstrip())
    cut = len(line) - len(line.lstrip()) + (prefix.end() if prefix else 0)
    return f"{line[:cut]}{tag(label)} {line[cut:]}"


@dataclass
class _Voice:
    now: str = NARRATOR  # the voice the text is in at this point of the line
    first: str = NARRATOR  # the voice the paragraph's line started in


def _tagged(
    lines: list[str],
    origin: str,
    tags: re.Pattern[str],
    unclosed: re.Pattern[str],
    why: str,
    on_tag: Callable[[re.Match[str], _Voice, int, str], str],
) -> list[str]:
    """Lines of a markup whose tags sit inside the text (e2a, abogen): each tag replaced by what
    `on_tag` says (it moves the voice), the text escaped, a paragraph's first line (or the line
    after a chapter heading `on_tag` put in) switched to the voice it starts in."""
    out: list[str] = []
    voice = _Voice()
    starts = True  # the next line with text starts a paragraph
    for n, line in enumerate(lines, 1):
        if not line.strip():
            out.append(line)
            starts = True
            continue
        voice.first = voice.now
        parts: list[str] = []
        pos = 0
        for m in tags.finditer(line):
            parts.append(escape(line[pos : m.start()]))
            pos = m.end()
            parts.append(on_tag(m, voice, n, line))
        rest = line[pos:]
        if unclosed.search(rest):
            raise _bad(origin, n, line, why)
        parts.append(escape(rest))
        joined = "".join(parts)
        if starts or "\n\n" in joined:
            head, sep, tail = joined.rpartition("\n\n")
            joined = head + sep + _start(tail, voice.now) if sep else _start(joined, voice.first)
        out.append(joined)
        starts = False
    return out


def _speaker_or_narrator(word: str, cast: Cast, unknown: Unknown, shown: str) -> str:
    found = speaker(word, cast)
    if found is None:
        unknown.append(shown)
    return found or NARRATOR


def _e2a(lines: list[str], cast: Cast, origin: str) -> tuple[list[str], Unknown]:
    unknown: Unknown = []

    def on_tag(m: re.Match[str], voice: _Voice, n: int, line: str) -> str:
        if m.group("end"):
            voice.now = NARRATOR
        elif m.group("voice") is not None:
            if not m.group("voice").strip():
                raise _bad(origin, n, line, "has an empty [voice:]: name a voice, [voice:NAME]...[/voice]")
            voice.now = _speaker_or_narrator(m.group("voice"), cast, unknown, m.group(0))
        else:
            return " "  # [pause], [break]
        return f" {tag(voice.now)} "

    why = "has a voice tag that does not close: write [voice:NAME]...[/voice]"
    return _tagged(lines, origin, _E2A_TAG, _E2A_OPEN, why, on_tag), unknown


def _abogen(lines: list[str], cast: Cast, origin: str) -> tuple[list[str], Unknown]:
    unknown: Unknown = []

    def on_tag(m: re.Match[str], voice: _Voice, n: int, line: str) -> str:
        key, value = m.group("key"), m.group("value").strip()
        if key == "VOICE":
            if not value:
                raise _bad(origin, n, line, "has an empty <<VOICE:>>: name a voice, <<VOICE:NAME>>")
            voice.now = _speaker_or_narrator(value, cast, unknown, m.group(0))
            return f" {tag(voice.now)} "
        if key == "CHAPTER_MARKER":
            voice.now = voice.first = NARRATOR
            return f"\n\n# {value}\n\n" if _HAS_WORD.search(value) else "\n\n"
        return " "  # <<METADATA_...>> and the like: not read

    why = "has a marker that does not close: write <<VOICE:NAME>>"
    return _tagged(lines, origin, _ABOGEN_TAG, _ABOGEN_OPEN, why, on_tag), unknown


def _jsonl(lines: list[str], cast: Cast, origin: str) -> tuple[list[str], Unknown]:
    out: list[str] = []
    unknown: Unknown = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as e:
            why = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deeply"
            raise _bad(origin, n, line, f'is not JSON ({why}): write one {{"speaker", "text"}} object a line') from None
        if not isinstance(item, dict) or not ({"text", "chapter"} & set(item)):
            raise _bad(origin, n, line, 'is not a {"speaker": "...", "text": "..."} object')
        who, text, chapter = item.get("speaker"), item.get("text", ""), item.get("chapter")
        if not isinstance(who, str | None) or not isinstance(text, str) or not isinstance(chapter, str | None):
            raise _bad(origin, n, line, 'has a speaker, text or chapter that is not a string: quote it ("...")')
        if chapter and _HAS_WORD.search(chapter):
            out.append(f"# {' '.join(chapter.split())}\n")
        label = speaker(who or "", cast)
        if label is None:
            unknown.append(f'"speaker": {json.dumps(who, ensure_ascii=False)}')
        for para in re.split(r"\n\s*\n", text):
            if para.strip():
                out.append(_start(escape(" ".join(para.split())), label or NARRATOR) + "\n")
    return out, unknown


def _lines(lines: list[str], cast: Cast, origin: str) -> tuple[list[str], Unknown]:
    out: list[str] = []
    unknown: Unknown = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if _MD_HEADING.match(line.strip()):
            out.append(escape(line.strip()) + "\n")
            continue
        m = _SCRIPT_LINE.fullmatch(line.strip())
        if m is None or not _HAS_WORD.search(m.group("name")):
            raise _bad(
                origin, n, line, "is not `Name: text`: give every line its speaker (Narrator: ... for narration)"
            )
        if not _HAS_WORD.search(m.group("text")):
            raise _bad(origin, n, line, "has a speaker and no text: remove it or give it its words")
        label = speaker(m.group("name"), cast)
        if label is None:
            unknown.append(f"{m.group('name').strip()}:")
        out.append(_start(escape(m.group("text")), label or NARRATOR) + "\n")
    return out, unknown
