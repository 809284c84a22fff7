"""`narrate feed`: the podcast feeds (jobs/feeds) with the URLs podcast apps take, their episodes,
and revoking a feed's token."""

from __future__ import annotations

from typing import Any

import redis
from narrate.jobs.api.status import status
from narrate.jobs.errors import JobNotFound
from narrate.jobs.feeds import store
from narrate.jobs.settings import Settings


def _row(settings: Settings, feed: store.Feed, episodes: int) -> dict[str, Any]:
    return {
        "name": feed.name,
        "title": feed.title,
        "created_at": feed.created_at,
        "narrations": episodes,
        "url": store.url(settings.public_url, feed, with_token=True),
    }


def list_feeds(r: redis.Redis, settings: Settings) -> list[dict[str, Any]]:
    return [_row(settings, feed, n) for feed, n in store.all_feeds(r)]


def show(r: redis.Redis, settings: Settings, name: str) -> dict[str, Any]:
    """A feed, its URL and each narration in it (newest first) with its status."""
    feed = store.get(r, name)
    ids = store.items(r, feed.name)
    rows = []
    for job_id in ids:
        try:
            st = status(r, job_id)
            rows.append({"id": job_id, "document": st.get("document"), "status": st["status"]})
        except JobNotFound:
            rows.append({"id": job_id, "document": None, "status": "expired"})
    return {**_row(settings, feed, len(ids)), "items": rows}


def revoke(r: redis.Redis, settings: Settings, name: str) -> dict[str, Any]:
    feed = store.revoke(r, name)
    return _row(settings, feed, len(store.items(r, feed.name)))


def remove(r: redis.Redis, name: str) -> str:
    return store.remove(r, name).name
