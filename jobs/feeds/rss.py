"""A feed's RSS 2.0 document, with the tags podcast apps read: iTunes' (author, image, duration,
explicit) and Podcasting 2.0's `podcast:medium` (audiobook), `podcast:chapters` (a JSON chapter
list per episode) and `podcast:transcript` (the narration's WebVTT subtitles, `rel="captions"`,
where it wrote them: `--subtitles vtt`); and that JSON.
Written with the standard library's ElementTree (every text escaped by it), each text and attribute
first cleaned of what XML 1.0 does not allow (jobs/xmltext.py): one odd character in a name would
make strict podcast apps show no episode at all."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any
from urllib.parse import quote

from narrate.jobs.feeds.titles import from_file_name
from narrate.jobs.xmltext import xml_text

ITUNES = "http://www.itunes.com/dtds/podcast-1.0.dtd"
PODCAST = "https://podcastindex.org/namespace/1.0"
ATOM = "http://www.w3.org/2005/Atom"
ET.register_namespace("itunes", ITUNES)
ET.register_namespace("podcast", PODCAST)
ET.register_namespace("atom", ATOM)
TRANSCRIPT = "transcript.vtt"  # an episode's transcript, served under this name (jobs/web/feed_routes.py)
MEDIA = {
    ".mp3": "audio/mpeg",
    ".m4b": "audio/x-m4b",
    ".m4a": "audio/mp4",
    ".flac": "audio/flac",
    ".ogg": "audio/ogg",
    ".opus": "audio/ogg",
    ".wav": "audio/wav",
}


@dataclass(frozen=True)
class Episode:
    job_id: str
    title: str
    published: datetime
    file_name: str  # the audio file, as the narration's outputs name it
    bytes: int
    media_type: str
    duration_s: float | None
    chapters: list[dict[str, Any]] = field(default_factory=list)  # {"title", "start_s"}
    has_cover: bool = False
    voice: str | None = None
    transcript: str | None = None  # the narration's WebVTT subtitles, as its outputs name them (None: none)


def _when(text: str | None) -> datetime:
    try:
        found = datetime.fromisoformat(text) if text else None
    except ValueError:
        found = None
    return (found or datetime.now(UTC)).astimezone(UTC)


def episode_of(
    narration: dict[str, Any],
    file: dict[str, Any],
    has_cover: bool,
    title: str | None = None,
    transcript: str | None = None,
) -> Episode:
    """An episode from a finished narration (jobs/web/views.py `narration`) and its audio file;
    `title`: the book's (jobs/feeds/titles.py; None: one made from the document's file name);
    `transcript`: the name of its WebVTT subtitles, if it wrote them."""
    suffix = "." + file["name"].rsplit(".", 1)[-1].lower()
    title = title or from_file_name(narration.get("document") or "") or from_file_name(file["name"]) or narration["id"]
    return Episode(
        narration["id"],
        title,
        _when(narration.get("ended_at") or narration.get("created_at")),
        file["name"],
        int(file["bytes"]),
        MEDIA.get(suffix, "application/octet-stream"),
        file.get("duration_s") or narration.get("duration_s"),
        narration["progress"].get("chapters") or [],
        has_cover,
        narration.get("voice"),
        transcript,
    )


def episode_url(base: str, feed: str, episode: Episode, what: str, token: str | None) -> str:
    tail = f"?token={quote(token)}" if token else ""
    return f"{base.rstrip('/')}/feeds/{quote(feed)}/{quote(episode.job_id)}/{quote(what, errors='replace')}{tail}"


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})
    if text is not None:
        el.text = xml_text(text)
    return el


def render(feed: str, title: str, base: str, episodes: list[Episode], token: str | None) -> bytes:
    """The RSS document of `episodes` (newest first), its URLs under `base` (with the token, if any)."""
    rss = ET.Element("rss", {"version": "2.0"})
    channel = _sub(rss, "channel")
    self_url = f"{base.rstrip('/')}/feeds/{quote(feed)}.xml" + (f"?token={quote(token)}" if token else "")
    _sub(channel, "title", title)
    _sub(channel, "link", base.rstrip("/") + "/books")
    _sub(channel, "description", f"Narrations of the feed {feed}, read by narrate.")
    _sub(channel, f"{{{ATOM}}}link", href=self_url, rel="self", type="application/rss+xml")
    _sub(channel, "generator", "narrate")
    _sub(channel, "lastBuildDate", format_datetime(max((e.published for e in episodes), default=datetime.now(UTC))))
    _sub(channel, f"{{{ITUNES}}}author", "narrate")
    _sub(channel, f"{{{ITUNES}}}explicit", "false")
    _sub(channel, f"{{{ITUNES}}}type", "episodic")
    _sub(channel, f"{{{PODCAST}}}medium", "audiobook")  # narrations: read text, not talk
    covered = next((e for e in episodes if e.has_cover), None)
    if covered is not None:
        _sub(channel, f"{{{ITUNES}}}image", href=episode_url(base, feed, covered, "cover", token))
    for e in episodes:
        item = _sub(channel, "item")
        _sub(item, "title", e.title)
        _sub(item, "guid", e.job_id, isPermaLink="false")
        _sub(item, "pubDate", format_datetime(e.published))
        said = f"Read by narrate in the voice {e.voice}." if e.voice else "Read by narrate."
        _sub(item, "description", said)
        _sub(
            item,
            "enclosure",
            url=episode_url(base, feed, e, e.file_name, token),
            length=str(e.bytes),
            type=e.media_type,
        )
        if e.duration_s is not None:
            _sub(item, f"{{{ITUNES}}}duration", str(round(e.duration_s)))
        if e.has_cover:
            _sub(item, f"{{{ITUNES}}}image", href=episode_url(base, feed, e, "cover", token))
        if e.chapters:
            _sub(
                item,
                f"{{{PODCAST}}}chapters",
                url=episode_url(base, feed, e, "chapters.json", token),
                type="application/json+chapters",
            )
        if e.transcript:
            _sub(
                item,
                f"{{{PODCAST}}}transcript",
                url=episode_url(base, feed, e, TRANSCRIPT, token),
                type="text/vtt",
                rel="captions",
            )
    return b"<?xml version='1.0' encoding='UTF-8'?>\n" + ET.tostring(rss, encoding="unicode").encode()


def chapters_json(episode: Episode) -> dict[str, Any]:
    """Podcasting 2.0's JSON chapters of an episode."""
    marks = [{"startTime": round(float(c["start_s"]), 3), "title": xml_text(str(c["title"]))} for c in episode.chapters]
    return {"version": "1.2.0", "chapters": marks}
