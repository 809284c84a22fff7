"""A feed in Redis: ``narrate:feed:<name>`` (a hash: name, title, created_at, token) and
``narrate:feed-items:<name>`` (a sorted set: each narration's id by when it was submitted). The
token is the feed's secret in its URL (podcast apps send no headers); revoking it makes a new one,
so every URL given out before answers 404. Two indexes spare every request a scan of the keyspace:
``narrate:feeds`` (a set of the feeds' names) and ``narrate:job-feeds:<job id>`` (the feeds a narration
is in), built once over feeds made before them (jobs/server/schema.py)."""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import redis
from narrate.jobs.errors import BadInput, NotFound
from narrate.jobs.server import schema
from narrate.jobs.server.store import PREFIX, text

NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
MAX_ITEMS = 500  # the newest; older narrations leave the feed (their files stay)


class FeedNotFound(NotFound):
    """No feed of that name (`narrate serve` answers a wrong token as it answers this: jobs/web/feed_routes.py)."""

    code = "feed_not_found"


def check_feed_name(text: str) -> str:
    name = text.strip().lower()
    if not NAME.fullmatch(name):
        raise BadInput(
            f"feed name {text[:80]!r} is not valid: use 1-64 letters, digits, '-' or '_', starting with "
            "a letter or digit"
        )
    return name


def _key(name: str) -> str:
    return f"{PREFIX}feed:{name}"


def _items(name: str) -> str:
    return f"{PREFIX}feed-items:{name}"


FEEDS = f"{PREFIX}feeds"
INDEX, INDEX_VERSION = "feeds", 1


def _job_feeds(job_id: str) -> str:
    return f"{PREFIX}job-feeds:{job_id}"


def index_old_feeds(r: redis.Redis) -> None:
    """The indexes over feeds made before them (a scan, once: jobs/server/schema.py)."""
    for raw in r.scan_iter(match=f"{PREFIX}feed:*", count=200, _type="hash"):
        name = text(raw).removeprefix(f"{PREFIX}feed:")
        with r.pipeline(transaction=False) as p:
            p.sadd(FEEDS, name)
            for job_id in _members(r.zrange(_items(name), 0, -1)):
                p.sadd(_job_feeds(job_id), name)
            p.execute()


def _members(reply: object) -> list[str]:
    """A sorted set's members as redis-py returns them (bytes; without scores), as text."""
    return [text(v) for v in reply if isinstance(v, bytes | str)] if isinstance(reply, list) else []


def _indexed(r: redis.Redis) -> None:
    schema.ensure(r, INDEX, INDEX_VERSION, index_old_feeds)


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
    """Put narrations in feed `name`, making the feed (and its token) on first use; past MAX_ITEMS the oldest
    leave it."""
    name = check_feed_name(name)
    _indexed(r)
    now = time.time()
    with r.pipeline() as p:
        p.hsetnx(_key(name), "name", name)
        p.hsetnx(_key(name), "title", title or name)
        p.hsetnx(_key(name), "created_at", datetime.now(UTC).isoformat(timespec="seconds"))
        p.hsetnx(_key(name), "token", secrets.token_urlsafe(24))
        p.sadd(FEEDS, name)
        p.zadd(_items(name), {job_id: now + i * 1e-6 for i, job_id in enumerate(job_ids)}, nx=True)
        for job_id in job_ids:
            p.sadd(_job_feeds(job_id), name)
        p.zrange(_items(name), 0, -MAX_ITEMS - 1)
        p.zremrangebyrank(_items(name), 0, -MAX_ITEMS - 1)
        *_, gone, _ = p.execute()
    if gone:
        with r.pipeline() as p:
            for job_id in _members(gone):
                p.srem(_job_feeds(job_id), name)
            p.execute()
    return get(r, name)


def items(r: redis.Redis, name: str) -> list[str]:
    """The feed's narrations, newest first."""
    return _members(r.zrevrange(_items(check_feed_name(name)), 0, -1))


def replace(r: redis.Redis, old_id: str, new_id: str) -> list[str]:
    """A redo's job takes the place of the job it redoes in every feed that has it, at its place (its
    score); returns those feeds' names."""
    _indexed(r)
    names = []
    for name in sorted(text(n) for n in r.smembers(_job_feeds(old_id))):
        score = r.zscore(_items(name), old_id)
        if score is None:
            continue
        with r.pipeline() as p:  # one transaction: the feed never has both, or neither
            p.zadd(_items(name), {new_id: float(score)})
            p.zrem(_items(name), old_id)
            p.sadd(_job_feeds(new_id), name)
            p.execute()
        names.append(name)
    r.delete(_job_feeds(old_id))
    return names


def forget(r: redis.Redis, job_id: str) -> None:
    """Take a deleted narration out of every feed."""
    _indexed(r)
    with r.pipeline() as p:
        for name in r.smembers(_job_feeds(job_id)):
            p.zrem(_items(text(name)), job_id)
        p.delete(_job_feeds(job_id))
        p.execute()


def all_feeds(r: redis.Redis) -> list[tuple[Feed, int]]:
    _indexed(r)
    out = []
    for name in sorted(text(n) for n in r.smembers(FEEDS)):
        try:
            feed = get(r, name)
        except FeedNotFound:
            continue
        out.append((feed, int(r.zcard(_items(feed.name)))))
    return out


def revoke(r: redis.Redis, name: str) -> Feed:
    """A new token for the feed: every URL with the old one answers 404 from now on."""
    feed = get(r, name)
    r.hset(_key(feed.name), "token", secrets.token_urlsafe(24))
    return get(r, feed.name)


def remove(r: redis.Redis, name: str) -> Feed:
    feed = get(r, name)
    _indexed(r)
    held = _members(r.zrange(_items(feed.name), 0, -1))
    with r.pipeline() as p:
        for job_id in held:
            p.srem(_job_feeds(job_id), feed.name)
        p.srem(FEEDS, feed.name)
        p.delete(_key(feed.name), _items(feed.name))
        p.execute()
    return feed


def url(base: str, feed: Feed, with_token: bool) -> str:
    """The feed's address for podcast apps."""
    return f"{base.rstrip('/')}/feeds/{feed.name}.xml" + (f"?token={feed.token}" if with_token else "")
