"""A feed in Redis: ``narrate:feed:<name>`` (a hash: name, title, created_at, token) and
``narrate:feed-items:<name>`` (a sorted set: each narration's id by when it was submitted). The
token is the feed's secret in its URL (podcast apps send no headers); revoking it makes a new one,
so every URL given out before answers 404."""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import redis
from narrate.jobs.errors import BadInput, NotFound
from narrate.jobs.server.store import PREFIX, text

NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
MAX_ITEMS = 500  # the newest; older narrations leave the feed (their files stay)


class FeedNotFound(NotFound):
    """No feed of that name (`narrate serve` answers a wrong token as it answers this: jobs/web/feeds.py)."""

    code = "feed_not_found"


def check_feed_name(text: str) -> str:
    name = text.strip().lower()
    if not NAME.fullmatch(name):
        raise BadInput(f"feed name {text[:80]!r} is not valid: use 1-64 letters, digits, '-' or '_', starting with "
                       "a letter or digit")  # fmt: skip
    return name


def _key(name: str) -> str:
    return f"{PREFIX}feed:{name}"


def _items(name: str) -> str:
    return f"{PREFIX}feed-items:{name}"


@dataclass(frozen=True)
class Feed:
    name: str
    title: str
    created_at: str
    token: str


def get(r: redis.Redis, name: str) -> Feed:
    got = r.hgetall(_key(check_feed_name(name)))
    if not got:
        raise FeedNotFound(
            f"no feed named {name[:64]!r} (`narrate feed list` shows them; `submit --feed NAME` makes one)"
        )
    row = {text(k): text(v) for k, v in got.items()}
    return Feed(row["name"], row.get("title") or row["name"], row.get("created_at", ""), row["token"])


def add(r: redis.Redis, name: str, job_ids: list[str], title: str | None = None) -> Feed:
    """Put narrations in feed `name`, making the feed (and its token) on first use."""
    name = check_feed_name(name)
    now = time.time()
    with r.pipeline() as p:
        p.hsetnx(_key(name), "name", name)
        p.hsetnx(_key(name), "title", title or name)
        p.hsetnx(_key(name), "created_at", datetime.now(UTC).isoformat(timespec="seconds"))
        p.hsetnx(_key(name), "token", secrets.token_urlsafe(24))
        p.zadd(_items(name), {job_id: now + i * 1e-6 for i, job_id in enumerate(job_ids)}, nx=True)
        p.zremrangebyrank(_items(name), 0, -MAX_ITEMS - 1)
        p.execute()
    return get(r, name)


def items(r: redis.Redis, name: str) -> list[str]:
    """The feed's narrations, newest first."""
    return [text(v) for v in r.zrevrange(_items(check_feed_name(name)), 0, -1) if isinstance(v, bytes | str)]


def replace(r: redis.Redis, old_id: str, new_id: str) -> list[str]:
    """A redo's job takes the place of the job it redoes in every feed that has it, at its place (its
    score); returns those feeds' names."""
    names = []
    for key in r.scan_iter(match=f"{PREFIX}feed-items:*", count=200):
        score = r.zscore(key, old_id)
        if score is None:
            continue
        with r.pipeline() as p:  # one transaction: the feed never has both, or neither
            p.zadd(key, {new_id: float(score)})
            p.zrem(key, old_id)
            p.execute()
        names.append(text(key).removeprefix(f"{PREFIX}feed-items:"))
    return sorted(names)


def forget(r: redis.Redis, job_id: str) -> None:
    """Take a deleted narration out of every feed."""
    for key in r.scan_iter(match=f"{PREFIX}feed-items:*", count=200):
        r.zrem(key, job_id)


def all_feeds(r: redis.Redis) -> list[tuple[Feed, int]]:
    out = []
    for key in sorted(text(k) for k in r.scan_iter(match=f"{PREFIX}feed:*", count=200)):
        feed = get(r, key.removeprefix(f"{PREFIX}feed:"))
        out.append((feed, int(r.zcard(_items(feed.name)))))
    return out


def revoke(r: redis.Redis, name: str) -> Feed:
    """A new token for the feed: every URL with the old one answers 404 from now on."""
    feed = get(r, name)
    r.hset(_key(feed.name), "token", secrets.token_urlsafe(24))
    return get(r, feed.name)


def remove(r: redis.Redis, name: str) -> Feed:
    feed = get(r, name)
    r.delete(_key(feed.name), _items(feed.name))
    return feed


def url(base: str, feed: Feed, with_token: bool) -> str:
    """The feed's address for podcast apps."""
    return f"{base.rstrip('/')}/feeds/{feed.name}.xml" + (f"?token={feed.token}" if with_token else "")
