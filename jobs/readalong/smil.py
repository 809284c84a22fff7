"""EPUB 3 Media Overlays (https://www.w3.org/TR/epub/#sec-media-overlays): one SMIL document a page,
a `par` for each sentence marked in it (its span and its clip of the book's audio), or, where the
sentence has word timings, a `seq` of the sentence holding a `par` for each word marked (and heard for a
millisecond at least)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

from lxml import etree
from narrate.jobs.readalong.timing import Clip, Word, word_clips
from narrate.jobs.readalong.xhtml_pages import OPS, Page

SMIL = "http://www.w3.org/ns/SMIL"


def clock(seconds: float) -> str:
    """A SMIL full clock value to the millisecond: 0:01:02.345."""
    ms = max(0, round(seconds * 1000))
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h}:{m:02d}:{s:02d}.{ms:03d}"


def relative(target: str, start: str) -> str:
    """`target` (a path in the package) as a URL relative to the file `start`."""
    return posixpath.relpath(target, posixpath.dirname(start) or ".")


def overlay(
    page: Page, path: str, audio: str, clips: dict[int, Clip], words: Mapping[int, Sequence[Word]] | None = None
) -> tuple[bytes, float]:
    """The SMIL document of a page (`path`: where it goes in the package; `audio`: the audio's
    path there), and the total of its clips' durations in seconds (its media:duration)."""
    root = etree.Element(f"{{{SMIL}}}smil", nsmap={None: SMIL, "epub": OPS})
    root.set("version", "3.0")
    body = etree.SubElement(root, f"{{{SMIL}}}body")
    text_url, audio_url = relative(page.path, path), relative(audio, path)
    total = 0.0
    for index in sorted(page.marked):
        clip = clips.get(index)
        if clip is None:
            continue
        ident = page.marked[index]
        word_ids = page.words.get(index) or []
        said = list((words or {}).get(index) or [])
        kept = [(w, wid) for w, wid in zip(said, word_ids, strict=False) if wid]
        spans = word_clips(clip, [w for w, _ in kept]) if kept else []
        heard = [(wid, a, b) for (_, wid), (a, b) in zip(kept, spans, strict=True) if clock(a) != clock(b)]
        if heard:  # a word whose clip is shorter than a millisecond has no par (its neighbours' clips meet)
            seq = etree.SubElement(body, f"{{{SMIL}}}seq")
            seq.set("id", f"seq-{ident}")
            seq.set(f"{{{OPS}}}textref", f"{text_url}#{ident}")
            for wid, a, b in heard:
                _par(seq, f"par-{wid}", f"{text_url}#{wid}", audio_url, a, b)
        else:
            _par(body, f"par-{ident}", f"{text_url}#{ident}", audio_url, clip.start, clip.end)
        total += clip.duration
    return etree.tostring(root, xml_declaration=True, encoding="utf-8"), total


def _par(parent: etree._Element, ident: str, text: str, audio: str, start: float, end: float) -> None:
    par = etree.SubElement(parent, f"{{{SMIL}}}par")
    par.set("id", ident)
    etree.SubElement(par, f"{{{SMIL}}}text").set("src", text)
    sound = etree.SubElement(par, f"{{{SMIL}}}audio")
    sound.set("src", audio)
    sound.set("clipBegin", clock(start))
    sound.set("clipEnd", clock(end))
