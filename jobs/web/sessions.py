"""The pages' sign-in sessions, kept by the server in Redis: signing in with the API key makes a
random token (the cookie), stored only as its SHA-256 under ``narrate:session:HASH`` with an expiry;
signing out deletes it, so a copied cookie stops working at once. Each session records a fingerprint
of the key it was made with: changing NARRATE_API_KEY ends every session."""

from __future__ import annotations

import hashlib
import secrets

import redis
from narrate.jobs.server.store import PREFIX

KEY = f"{PREFIX}session:"
SESSION_DAYS = 30


def _fingerprint(api_key: str) -> bytes:
    return hashlib.sha256(b"narrate session key\0" + api_key.encode()).hexdigest()[:32].encode()


def _key(token: str) -> str:
    return KEY + hashlib.sha256(token.encode()).hexdigest()


def start(r: redis.Redis, api_key: str, days: int = SESSION_DAYS) -> str:
    """A new session's token (to set as the cookie)."""
    token = secrets.token_urlsafe(32)
    r.set(_key(token), _fingerprint(api_key), ex=days * 86400)
    return token


def valid(r: redis.Redis, api_key: str, token: str) -> bool:
    if not token or len(token) > 200:
        return False
    stored = r.get(_key(token))
    return isinstance(stored, bytes) and secrets.compare_digest(stored, _fingerprint(api_key))


def end(r: redis.Redis, token: str) -> None:
    if token and len(token) <= 200:
        r.delete(_key(token))
