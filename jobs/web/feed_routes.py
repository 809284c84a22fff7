"""Podcast feeds over HTTP: `/feeds/{name}.xml` (RSS 2.0, jobs/feeds/rss.py), each episode's audio
(HTTP Range: podcast apps seek and resume), its Podcasting 2.0 chapters, its transcript (the WebVTT
subtitles it wrote beside the audio) and its cover. Podcast apps
send no headers, so these routes take no key or cookie (jobs/web/guard.py): once the server has a
key, each URL carries the feed's token instead (`?token=`, compared in constant time), and a
missing, wrong or revoked one gets the very answer an unknown feed gets (`UNKNOWN`, 404), on every
route. Only the finished narrations of the feed, and only their audio, are served; an episode is
titled by its book's title (jobs/feeds/titles.py)."""

from __future__ import annotations

import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from narrate.jobs.audio.tagging import read_cover
from narrate.jobs.errors import BadInput, JobNotFound
from narrate.jobs.feeds import rss, titles
from narrate.jobs.feeds import store as feeds
from narrate.jobs.web import outputs, views
from narrate.jobs.web.errors import ApiError
from narrate.jobs.web.outputs import AUDIO
from narrate.jobs.web.state import Web, WebDep

router = APIRouter(include_in_schema=False)  # for podcast apps, not API clients (docs/serve.md describes them)
Token = Annotated[str | None, Query(description="the feed's token (required once the server has an API key)")]


# One answer for an unknown feed, a bad name, a missing, wrong or revoked token, on every route: the
# same status, body and headers, so a feed's name cannot be found out without its token.
UNKNOWN = "no such feed, or a wrong or revoked token (`narrate feed show NAME` gives its URL)"
_NO_TOKEN = secrets.token_urlsafe(24)  # compared against when the feed does not exist: the same work


def _feed(web: Web, name: str, token: str | None) -> feeds.Feed:
    try:
        feed: feeds.Feed | None = feeds.get(web.redis, name)
    except (feeds.FeedNotFound, BadInput):
        feed = None
    required = web.settings.api_key is not None
    held = feed.token if feed is not None else _NO_TOKEN
    matches = secrets.compare_digest((token or "").encode(), held.encode())  # constant time
    if feed is None or (required and not (token and matches)):
        raise ApiError(404, UNKNOWN)
    return feed


def _episode(web: Web, job_id: str) -> tuple[rss.Episode, outputs.OutputFile] | None:
    """A finished narration's episode and its audio file on this host (None: not finished, no audio)."""
    try:
        job, found = views.narration_and_files(web.redis, web.settings, job_id)
    except JobNotFound:
        return None
    if job["status"] != "completed":
        return None
    audio = next((f for f in found if f.path.suffix.lower() in AUDIO), None)
    if audio is None:
        return None
    listed = next(f for f in job["outputs"] if f["name"] == audio.name)
    title = titles.episode_title(audio.path, job.get("document"), job["id"])
    vtt = next((f for f in found if f.path.suffix.lower() == ".vtt" and f.path.stem == audio.path.stem), None)
    transcript = vtt.path.name if vtt is not None else None
    return rss.episode_of(job, listed, read_cover(audio.path) is not None, title, transcript), audio


def _episodes(web: Web, feed: feeds.Feed) -> list[rss.Episode]:
    return [got[0] for job_id in feeds.items(web.redis, feed.name) if (got := _episode(web, job_id)) is not None]


@router.get(
    "/feeds/{name}.xml",
    response_class=Response,
    responses={
        200: {"content": {"application/rss+xml": {}}, "description": "the feed"},
        404: {"description": "no such feed, or a wrong or revoked token"},
    },
)
def feed_xml(request: Request, web: WebDep, name: str, token: Token = None) -> Response:
    """The feed: RSS 2.0 with iTunes and Podcasting 2.0 tags, its finished narrations newest first."""
    feed = _feed(web, name, token)
    body = rss.render(feed.name, feed.title, str(request.base_url), _episodes(web, feed), token if token else None)
    return Response(body, media_type="application/rss+xml; charset=utf-8", headers={"Cache-Control": "no-cache"})


def _in_feed(web: Web, name: str, token: str | None, job_id: str) -> tuple[rss.Episode, outputs.OutputFile]:
    feed = _feed(web, name, token)
    got = _episode(web, job_id) if job_id in feeds.items(web.redis, feed.name) else None
    if got is None:
        raise ApiError(404, f"feed {feed.name} has no finished episode {job_id[:80]}")
    return got


@router.get("/feeds/{name}/{job_id}/chapters.json", response_class=JSONResponse)
def chapters(web: WebDep, name: str, job_id: str, token: Token = None) -> dict[str, Any]:
    """An episode's chapters (Podcasting 2.0's JSON chapters)."""
    episode, _ = _in_feed(web, name, token, job_id)
    return rss.chapters_json(episode)


@router.get("/feeds/{name}/{job_id}/cover")
def cover(web: WebDep, name: str, job_id: str, token: Token = None) -> Response:
    """An episode's cover art (the one embedded in its audio)."""
    _, audio = _in_feed(web, name, token, job_id)
    found = read_cover(audio.path)
    if found is None:
        raise ApiError(404, f"episode {job_id[:80]} has no cover art")
    return Response(found[0], media_type=found[1])


@router.get(f"/feeds/{{name}}/{{job_id}}/{rss.TRANSCRIPT}", response_class=FileResponse)
def transcript(web: WebDep, name: str, job_id: str, token: Token = None) -> FileResponse:
    """An episode's transcript: the WebVTT subtitles its narration wrote beside the audio."""
    episode, audio = _in_feed(web, name, token, job_id)
    if episode.transcript is None:
        raise ApiError(404, f"episode {job_id[:80]} has no transcript (narrate it with --subtitles vtt)")
    return FileResponse(audio.path.with_name(episode.transcript), media_type="text/vtt; charset=utf-8")


@router.get("/feeds/{name}/{job_id}/{file_name:path}", response_class=FileResponse)
def audio(web: WebDep, name: str, job_id: str, file_name: str, token: Token = None) -> FileResponse:
    """An episode's audio (HTTP Range: 206)."""
    episode, audio = _in_feed(web, name, token, job_id)
    if file_name != episode.file_name:
        raise ApiError(404, f"episode {job_id[:80]} has no file {file_name[:100]!r}")
    return FileResponse(audio.path, media_type=episode.media_type, filename=audio.path.name)
