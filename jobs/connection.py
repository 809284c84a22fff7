"""The Redis connection of a narrate process: NARRATE_REDIS_URL, or the embedded Valkey server."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from .embedded import EmbeddedServer
from .errors import ServerUnavailable
from .settings import Settings


def redact(url: str) -> str:
    """The URL with any password replaced by ***, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def _retry(patient: bool) -> Retry:
    """Workers ride out a Redis outage of about two minutes; the CLI gives up within seconds."""
    if patient:
        return Retry(ExponentialBackoff(cap=4.0, base=0.25), 40)
    return Retry(ExponentialBackoff(cap=0.5, base=0.1), 2)


class Connection:
    """Context manager: ``with Connection(settings) as conn: conn.redis ...``.

    ``patient=True`` (workers): commands are retried through a Redis outage of ~2 minutes."""

    def __init__(self, settings: Settings, patient: bool = False):
        self.settings = settings
        self.patient = patient
        self.embedded: EmbeddedServer | None = None
        self.redis: redis.Redis | None = None

    @property
    def url(self) -> str:
        """The server URL, safe to print (password redacted)."""
        if self.embedded is not None:
            return self.embedded.url
        return redact(self.settings.redis_url or "")

    def open(self) -> redis.Redis:
        if self.settings.redis_url is None:
            self.embedded = EmbeddedServer(self.settings.home)
            self.embedded.acquire()
            self.redis = self.embedded.client(
                health_check_interval=30,
                retry=_retry(self.patient),
                retry_on_error=[redis.ConnectionError, redis.TimeoutError],
            )
            return self.redis
        url = self.settings.redis_url
        try:
            client = redis.Redis.from_url(url, socket_connect_timeout=5, health_check_interval=30)
            client.ping()  # fail fast on the first contact, then retry through outages
            client = redis.Redis.from_url(
                url,
                socket_connect_timeout=5,
                health_check_interval=30,
                retry=_retry(self.patient),
                retry_on_error=[redis.ConnectionError, redis.TimeoutError],
            )
        except ValueError as e:
            raise ServerUnavailable(f"NARRATE_REDIS_URL {redact(url)} is not a valid Redis URL: {e}") from None
        except redis.AuthenticationError:
            raise ServerUnavailable(f"Redis at {redact(url)} refused the password; check NARRATE_REDIS_URL") from None
        except (redis.ConnectionError, redis.TimeoutError, OSError) as e:
            msg = str(e).replace(url, redact(url))
            raise ServerUnavailable(
                f"Redis at {redact(url)} did not answer ({msg}); start it, fix NARRATE_REDIS_URL, "
                "or unset it to use the embedded server"
            ) from None
        self.redis = client
        return client

    def close(self) -> None:
        if self.redis is not None:
            self.redis.close()
            self.redis = None
        if self.embedded is not None:
            self.embedded.release()
            self.embedded = None

    def __enter__(self) -> Connection:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
