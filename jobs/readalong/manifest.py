"""An audiobook manifest beside the audio (`book.audiobook.json`): the Readium Web Publication
Manifest in its audiobook profile (https://readium.org/webpub-manifest/profiles/audiobook),
`application/audiobook+json`, which audiobook apps and Readium's toolkits read: the book's
metadata (title, author, narrators, language, total duration in seconds), its reading order (the
book's audio file with its duration) and its table of contents, each chapter a link into the
audio with a media fragment (`book.m4b#t=123.4`). URLs are relative to the manifest, which lies
beside the audio."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

CONTEXT = "https://readium.org/webpub-manifest/context.jsonld"
PROFILE = "https://readium.org/webpub-manifest/profiles/audiobook"
MEDIA_TYPE = "application/audiobook+json"
AUDIO_TYPES = {".mp3": "audio/mpeg", ".m4a": "audio/mp4", ".m4b": "audio/mp4", ".flac": "audio/flac",
               ".ogg": "audio/ogg", ".opus": "audio/ogg; codecs=opus", ".wav": "audio/wav"}  # fmt: skip


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
