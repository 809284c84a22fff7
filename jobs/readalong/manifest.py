"""Audiobook manifests beside the audio. URLs are relative to the manifest, which lies beside the
audio; a chapter is a link into the audio with a media fragment (`book.m4b#t=123.4`).

- `audiobook` (`book.audiobook.json`): the Readium Web Publication Manifest in its audiobook
  profile (https://readium.org/webpub-manifest/profiles/audiobook), `application/audiobook+json`,
  which audiobook apps and Readium's toolkits read: the book's metadata (title, author, narrators,
  language, total duration in seconds), its reading order (the book's audio file with its
  duration) and its table of contents (`toc`).
- `w3c` (`book.publication.json` and `book.toc.html`): a W3C Audiobooks manifest
  (https://www.w3.org/TR/audiobooks/, on the W3C Publication Manifest): `readBy`, durations in ISO
  8601 (`PT1H2M5.5S`), its reading order, and its table of contents as the HTML document the
  specification asks for (`role="doc-toc"`), which links back to the manifest."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from narrate.jobs.xmltext import xml_text

CONTEXT = "https://readium.org/webpub-manifest/context.jsonld"
PROFILE = "https://readium.org/webpub-manifest/profiles/audiobook"
MEDIA_TYPE = "application/audiobook+json"
AUDIO_TYPES = {
    ".mp3": "audio/mpeg",
    ".m4a": "audio/mp4",
    ".m4b": "audio/mp4",
    ".flac": "audio/flac",
    ".ogg": "audio/ogg",
    ".opus": "audio/ogg; codecs=opus",
    ".wav": "audio/wav",
}


def people(value: str | None) -> list[str]:
    """'Ann Reader, Alice Sample' -> both names (a cast's narrators, as a library export lists them)."""
    return [n.strip() for n in (value or "").split(",") if n.strip()]


def fragment(seconds: float) -> str:
    """A media fragment's time (https://www.w3.org/TR/media-frags/#naming-time): seconds, 3 decimals at most."""
    return f"{round(seconds, 3):.3f}".rstrip("0").rstrip(".") or "0"


def audiobook(
    name: str,
    audio: str,
    duration: float,
    chapters: Sequence[tuple[float, str]],
    *,
    identifier: str,
    title: str,
    language: str,
    modified: datetime,
    author: str | None = None,
    narrator: str | None = None,
    description: str | None = None,
) -> dict[str, Any]:
    """The manifest named `name` for the audio file `audio` (both beside each other) lasting
    `duration` seconds, with its chapters as (start in seconds, title)."""
    href = quote(audio)
    kind = AUDIO_TYPES.get("." + audio.rsplit(".", 1)[-1].lower(), "audio/mpeg")
    metadata: dict[str, Any] = {
        "@type": "http://schema.org/Audiobook",
        "conformsTo": PROFILE,
        "identifier": identifier,
        "title": title,
        "language": language,
        "modified": modified.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "duration": round(duration, 3),
    }
    if people(author):
        metadata["author"] = people(author)
    if people(narrator):
        metadata["narrator"] = people(narrator)
    if description:
        metadata["description"] = description
    toc = [{"href": f"{href}#t={fragment(start)}", "title": t or "Untitled"} for start, t in chapters]
    return {
        "@context": CONTEXT,
        "metadata": metadata,
        "links": [{"rel": "self", "href": quote(name), "type": MEDIA_TYPE}],
        "readingOrder": [{"href": href, "type": kind, "duration": round(duration, 3), "title": title}],
        "toc": toc or [{"href": f"{href}#t=0", "title": title}],
    }


def render(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, ensure_ascii=False, indent=1) + "\n"


W3C_CONTEXT = ["https://schema.org", "https://www.w3.org/ns/pub-context"]
W3C_PROFILE = "https://www.w3.org/TR/audiobooks/"


def iso_duration(seconds: float) -> str:
    """An ISO 8601 duration to the millisecond: PT1H2M5.5S, PT0S."""
    ms = max(0, round(seconds * 1000))
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    return "PT" + (f"{h}H" if h else "") + (f"{m}M" if m else "") + (f"{s}S" if rest or not (h or m) else "")


def w3c(
    toc: str,
    audio: str,
    duration: float,
    *,
    identifier: str,
    title: str,
    language: str,
    modified: datetime,
    author: str | None = None,
    narrator: str | None = None,
) -> dict[str, Any]:
    """The W3C Audiobooks manifest of the audio file `audio` lasting `duration` seconds, its table of
    contents the HTML document `toc` (both beside the manifest)."""
    kind = AUDIO_TYPES.get("." + audio.rsplit(".", 1)[-1].lower(), "audio/mpeg")
    made: dict[str, Any] = {
        "@context": W3C_CONTEXT,
        "type": "Audiobook",
        "conformsTo": W3C_PROFILE,
        "id": identifier,
        "name": title,
        "inLanguage": [language],
        "dateModified": modified.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "duration": iso_duration(duration),
    }
    if people(author):
        made["author"] = people(author)
    if people(narrator):
        made["readBy"] = people(narrator)
    made["readingOrder"] = [
        {
            "type": "LinkedResource",
            "url": quote(audio),
            "encodingFormat": kind,
            "name": title,
            "duration": iso_duration(duration),
        }
    ]
    contents = {"type": "LinkedResource", "rel": "contents", "url": quote(toc), "encodingFormat": "text/html"}
    made["resources"] = [contents]
    return made


def _esc(text: str) -> str:
    return html.escape(xml_text(text), quote=True)


def toc_html(title: str, language: str, audio: str, chapters: Sequence[tuple[float, str]], manifest: str) -> str:
    """The W3C Audiobooks table of contents: each chapter a link into the audio, and a link to the
    manifest (`rel="publication"`)."""
    href = _esc(quote(audio))
    marks = chapters or [(0.0, title)]
    items = "\n".join(f'    <li><a href="{href}#t={fragment(at)}">{_esc(t or "Untitled")}</a></li>' for at, t in marks)
    link = f'<link rel="publication" href="{_esc(quote(manifest))}">'
    head = f'<head>\n<meta charset="utf-8">\n<title>{_esc(title)}</title>\n{link}\n</head>'
    nav = f'<nav role="doc-toc">\n  <h1>{_esc(title)}</h1>\n  <ol>\n{items}\n  </ol>\n</nav>'
    return f'<!DOCTYPE html>\n<html lang="{_esc(language)}">\n{head}\n<body>\n{nav}\n</body>\n</html>\n'
