"""Subtitles and the timing manifest: one cue per sentence, timed in samples of the stitched book
(so exact to the audio), written as SubRip (.srt), WebVTT (.vtt) and a JSON manifest (.json)."""

from __future__ import annotations

import json
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, replace

from narrate.jobs.constraints import SUBTITLE_FORMATS, format_list


@dataclass(frozen=True)
class Cue:
    index: int  # sentence index
    start: int  # sample of the book where the sentence starts
    end: int  # sample where it ends (its pause not included)
    chapter: int | None  # index into the chapter list, None before the first chapter
    text: str
    voice: str | None = None  # a cast's label of the voice that reads it (None: the narrator of a one-voice book)
    paragraph: int | None = None  # the paragraph it is in (0 first): the timing manifest's, for pages that lay it out


def parse_formats(value: str | None) -> str:
    """'vtt,srt' -> 'srt,vtt' in a canonical order; BadInput-free: raises ValueError with the reason."""
    return format_list(value, SUBTITLE_FORMATS, "subtitle format")


def with_chapters(cues: list[Cue], spans: list[tuple[int, int, str]]) -> list[Cue]:
    """Each cue's chapter: the index of the span (jobs/audio/book_writer.py chapter_spans) it starts in."""
    starts = [start for start, _, _ in spans]
    return [replace(c, chapter=bisect_right(starts, c.start) - 1 if starts else None) for c in cues]


def _clock(samples: int, rate: int, sep: str) -> str:
    ms = samples * 1000 // rate
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def _one_line(text: str) -> str:
    """The cue's text on one line, with no control characters, and never the cue-timing arrow: a
    "-->" inside it would end the cue (the replacement repeats: "--->" is "->", not "-->")."""
    text = " ".join("".join(ch for ch in text if unicodedata.category(ch) != "Cc" or ch.isspace()).split())
    while "-->" in text:
        text = text.replace("-->", "->")
    return text


def _vtt_text(text: str) -> str:
    """WebVTT cue text: "&", "<" and ">" escaped (a "<" would open a tag)."""
    return _one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _speaker(c: Cue) -> str:
    """WebVTT's voice span opening the cue, `<v alice>` (SubRip has none: its cues stay plain text)."""
    return f"<v {_vtt_text(c.voice)}>" if c.voice else ""


def srt(cues: list[Cue], rate: int) -> str:
    blocks = [
        f"{n}\n{_clock(c.start, rate, ',')} --> {_clock(c.end, rate, ',')}\n{_one_line(c.text)}\n"
        for n, c in enumerate(cues, 1)
    ]
    return "\n".join(blocks)


def vtt(cues: list[Cue], rate: int) -> str:
    blocks = [
        f"{_clock(c.start, rate, '.')} --> {_clock(c.end, rate, '.')}\n{_speaker(c)}{_vtt_text(c.text)}\n" for c in cues
    ]
    return "WEBVTT\n\n" + "\n".join(blocks)


def manifest(cues: list[Cue], rate: int, audio: str, samples: int, chapters: list[tuple[int, int, str]]) -> str:
    """JSON: the audio file's name, its duration, the chapters and every sentence's times."""
    data = {
        "audio": audio,
        "sample_rate": rate,
        "samples": samples,
        "duration": samples / rate,
        "chapters": [{"title": t, "start": s / rate, "end": e / rate} for s, e, t in chapters],
        "sentences": [
            {
                "index": c.index,
                "start": c.start / rate,
                "end": c.end / rate,
                "chapter": c.chapter,
                **({"paragraph": c.paragraph} if c.paragraph is not None else {}),
                "text": c.text,
                **({"voice": c.voice} if c.voice else {}),
            }
            for c in cues
        ],
    }
    return json.dumps(data, ensure_ascii=False, indent=1) + "\n"


def render(fmt: str, cues: list[Cue], rate: int, audio: str, samples: int, chapters: list[tuple[int, int, str]]) -> str:
    if fmt == "srt":
        return srt(cues, rate)
    if fmt == "vtt":
        return vtt(cues, rate)
    return manifest(cues, rate, audio, samples, chapters)
