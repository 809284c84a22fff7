"""Word-level WebVTT (karaoke style): one cue a sentence, as `--subtitles vtt` writes it, with a
timestamp tag before each word at the moment it is spoken (https://www.w3.org/TR/webvtt1/#webvtt-cue-timestamp),
so a player colours the words as they come (the part of the cue before a timestamp is its
"past", after it its "future"). Each word is found in the sentence as the document writes it (in
order, as the media overlays find them): the text keeps its punctuation and case, and a word not
found there gets no timestamp. A timestamp lies strictly inside its cue and after the one before
it, as WebVTT asks; one that would not is left out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from narrate.jobs.audio.subtitles import Cue, _clock, _one_line, _speaker
from narrate.jobs.readalong.marking import find_all, folded
from narrate.jobs.readalong.timing import Clip, Word, placed


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _ms(seconds: float) -> int:
    """Milliseconds, cut as the cue's own times are (jobs/audio/subtitles.py _clock)."""
    return max(0, int(seconds * 1000))


def _stamp(ms: int) -> str:
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}.{ms:03d}"


def _starts_in(text: str, words: Sequence[str]) -> list[int | None]:
    """Where each word starts in `text` (an index), found in order; None where it is not found."""
    positions: list[int] = []  # the index in `text` of each folded character
    for i, ch in enumerate(text):
        positions.extend([i] * len(folded(ch)))

    hits = find_all([folded(text)], words)
    return [positions[h.first] if h is not None else None for h in hits]


def cue_text(text: str, clip: Clip, words: Sequence[Word]) -> str:
    """A sentence's cue text with a timestamp before each word found in it (`words` on the book's
    clock, as `timing.placed` gives them)."""
    line = _one_line(text)
    starts = _starts_in(line, [w[0] for w in words])
    out, at, last, end = [], 0, _ms(clip.start), _ms(clip.end)
    for (_, start, _end), where in zip(words, starts, strict=True):
        if where is None or not last < _ms(start) < end:
            continue
        out.append(_escape(line[at:where]))
        out.append(f"<{_stamp(_ms(start))}>")
        at, last = where, _ms(start)
    out.append(_escape(line[at:]))
    return "".join(out)


def word_vtt(cues: Sequence[Cue], rate: int, words: Mapping[int, Sequence[Word]]) -> str:
    """WebVTT of the sentences' cues, with word timestamps where `words` (sentence index -> its
    words, in seconds from the sentence's start: timing.Word) has them."""
    blocks = []
    for c in cues:
        clip = Clip(c.index, c.start / rate, c.end / rate, c.chapter)
        said = placed(clip, words.get(c.index) or [])
        text = cue_text(c.text, clip, said) if said else _escape(_one_line(c.text))
        blocks.append(f"{_clock(c.start, rate, '.')} --> {_clock(c.end, rate, '.')}\n{_speaker(c)}{text}\n")
    return "WEBVTT\n\n" + "\n".join(blocks)
