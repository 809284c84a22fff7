"""Quoted speech found without markup (`--dialogue-voice`): where each paragraph's quotes are.

Quotes: `"..."`, `“...”`, `‘...’`, `'...'`, `„...“` (or `„...”`), `‚...‘`, `«...»`, `»...«`, `‹...›`,
`›...‹`, `「...」`, `『...』`, and Swedish `”...”`; a paragraph opened by a dash (`— Hola —dijo—.`,
`– Да, – сказал он.`) is dialogue, each later dash switching between speech and narration. What
lies inside a quote is speech (a quote inside it, `‘...’` in `“...”`, is part of it).

Apostrophes are not quotes: a single mark opens a quote only after a space or punctuation and
before a letter that does not start an elision (`'tis`, `'em`, `'90s` is a year), and closes one only
after punctuation or before punctuation or the paragraph's end (`don't`, `students' books` stay).
A quote that has no closing mark in its paragraph goes on to the paragraph's end when the next
paragraph opens with the same mark (the convention for speech over several paragraphs); otherwise
it is a stray mark. Ambiguous cases go to the narrator: a stray mark, a short phrase quoted inside
a sentence (`the so-called "experts" said`: three words at most, after a word, not ending in
punctuation), a quote with no letter, a dash line with no punctuation (`— Mark Twain`).

Splitting (`split_speech`): the voice changes at the quote marks, which stay with the speech; each
piece becomes sentences of its own, so `"We should leave," she said.` is two sentences, one per
voice. A comma or colon left at the start of a narration piece (`”, she said`) is dropped."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from narrate.jobs.documents.voicing import NARRATOR, Run

PAIRS: dict[str, str] = {
    "“": "”",
    "„": "“”",
    "«": "»",
    "»": "«",
    "‹": "›",
    "›": "‹",
    "「": "」",
    "『": "』",
    "﹁": "﹂",
    "﹃": "﹄",
    '"': '"',
    "”": "”",
    "＂": "＂",
    "‘": "’",
    "‚": "‘’",
    "'": "'",
}
SINGLE = frozenset("‘‚'")  # single marks, which apostrophes look like
SYMMETRIC = frozenset('"”＂')  # the same mark opens and closes
CJK = frozenset("「『﹁﹃")  # may follow a letter (no spaces between words)
CONTINUED_BY = {"«": "«»", "»": "»«", "„": "„»"}  # a paragraph opening with one of these goes on with the quote
DASHES = "—―–"
ELISIONS = frozenset("tis twas twere twill em cause cos coz til bout round n cept nuff ere e er im ow ello".split())
_PUNCT_BEFORE_CLOSE = set(".,!?…;:—–-")
_PUNCT_AFTER_CLOSE = set(".,!?;:…—–)]")
_SENTENCE_MARK = re.compile(r"[.,!?…;:¿¡。！？]")
_LEADING = re.compile(r"^[,;:](?=\s|$)|^\.(?=\s)")
_WORDS = re.compile(r"[^\W_][\w'’-]*")
_SPACES = re.compile(r"\s+")
_OPENERS = re.compile(f"[{re.escape(''.join(PAIRS))}]")
_CLOSERS = re.compile(f"[{re.escape(''.join(set(''.join(PAIRS.values()))))}]")

Span = tuple[int, int]  # [start, end) of speech in a paragraph, quote marks included


def speech_spans(paragraphs: Sequence[str]) -> list[list[Span]]:
    """Each paragraph's speech, in order (see the module's docstring). The next paragraph decides
    whether an unclosed quote goes on."""
    out = []
    for i, text in enumerate(paragraphs):
        following = paragraphs[i + 1].lstrip()[:1] if i + 1 < len(paragraphs) else ""
        out.append(_dash_spans(text) if _dash_opened(text) else _quote_spans(text, following))
    return out


def split_speech(paragraph: str, spans: Sequence[Span], speech: str, narration: str = NARRATOR) -> list[Run]:
    """The paragraph as runs: `speech` inside the spans, `narration` between them."""
    runs: list[Run] = []
    pos = 0
    for start, end in [*spans, (len(paragraph), len(paragraph))]:
        for voice, piece in ((narration, paragraph[pos:start]), (speech, paragraph[start:end])):
            text = _SPACES.sub(" ", piece).strip()
            if runs:
                text = _LEADING.sub("", text).strip()
            if not re.search(r"\w", text):
                continue
            if runs and runs[-1][0] == voice:
                runs[-1] = (voice, f"{runs[-1][1]} {text}")
            else:
                runs.append((voice, text))
        pos = end
    return runs


def _quote_spans(text: str, following: str) -> list[Span]:
    closers = _Closers(text)
    spans: list[Span] = []
    pos = 0
    n = len(text)
    while pos < n:
        j = _next_opener(text, pos)
        if j < 0:
            break
        mark = text[j]
        k = closers.after(PAIRS[mark], j + 1, single=mark in SINGLE)
        if k < 0:
            if following and following in CONTINUED_BY.get(mark, mark) and _has_letter(text[j + 1 :]):
                spans.append((j, n))  # speech that goes on in the next paragraph
                break
            pos = j + 1  # a stray mark
            continue
        if _is_speech(text, j, k):
            spans.append((j, k + 1))
        pos = k + 1
    return spans


def _next_opener(text: str, pos: int) -> int:
    """The index of the next mark from `pos` that may open a quote, or -1."""
    for found in _OPENERS.finditer(text, pos):
        j = found.start()
        mark = text[j]
        before = text[j - 1] if j else ""
        after = text[j + 1] if j + 1 < len(text) else ""
        if not after or (before.isalnum() and mark not in CJK):
            continue
        if mark in SYMMETRIC and after.isspace():
            continue
        if mark in SINGLE:
            word = _WORDS.match(text, j + 1)
            if not after.isalpha() or (word and word.group(0).lower().rstrip("'’") in ELISIONS):
                continue
        return j
    return -1


class _Closers:
    """Where each closing mark is in one paragraph; single marks only where they may close."""

    def __init__(self, text: str) -> None:
        self.at: dict[str, list[int]] = {}
        for found in _CLOSERS.finditer(text):
            k, ch = found.start(), found.group(0)
            if ch in "’'‘":
                before = text[k - 1] if k else " "
                after = text[k + 1] if k + 1 < len(text) else ""
                if before.isspace() or after.isalnum():
                    continue
                if not (before in _PUNCT_BEFORE_CLOSE or not after or after in _PUNCT_AFTER_CLOSE):
                    continue  # `students' books`: an apostrophe
            self.at.setdefault(ch, []).append(k)

    def after(self, marks: str, start: int, single: bool) -> int:
        found = []
        for mark in marks:
            at = self.at.get(mark, [])
            i = bisect.bisect_left(at, start)
            if i < len(at):
                found.append(at[i])
        return min(found) if found else -1


def _is_speech(text: str, j: int, k: int) -> bool:
    inner = text[j + 1 : k].strip()
    if not _has_letter(inner):
        return False
    if text[j] in CJK:
        return True
    quoted_in_sentence = j >= 2 and text[j - 1].isspace() and text[j - 2].isalnum()
    return not (quoted_in_sentence and len(_WORDS.findall(inner)) <= 3 and inner[-1].isalnum())


def _dash_opened(text: str) -> bool:
    body = text.lstrip()
    return len(body) > 1 and body[0] in DASHES and body[1] not in DASHES


def _dash_spans(text: str) -> list[Span]:
    """Speech from the opening dash to the next dash, narration to the one after, and so on."""
    start = len(text) - len(text.lstrip())
    toggles = [
        i
        for i in range(start + 1, len(text))
        if text[i] in DASHES and not (text[i - 1].isdigit() and i + 1 < len(text) and text[i + 1].isdigit())
    ]
    if not toggles and not _SENTENCE_MARK.search(text) and len(_WORDS.findall(text)) <= 5:
        return []  # `— Mark Twain`: an attribution, not a line of dialogue
    bounds = [start, *toggles, len(text)]
    spans = []
    for n in range(0, len(bounds) - 1, 2):
        begin = bounds[n] if n == 0 else bounds[n] + 1  # a closing dash goes with the narration
        end = bounds[n + 1]
        if _has_letter(text[begin:end]):
            spans.append((begin, end))
    return spans


def _has_letter(text: str) -> bool:
    return any(ch.isalpha() for ch in text)
