"""The Redis connection of a narrate process: NARRATE_REDIS_URL, or the embedded Valkey server."""

from __future__ import annotations

import math
import re

import redis
import redis.asyncio
from narrate.jobs.errors import ServerUnavailable
from narrate.jobs.server.embedded import EmbeddedServer
from narrate.jobs.settings import Settings
from redis import Redis  # for annotations in Connection, where `redis` is its property
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.retry import Retry

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_PASSWORD_PARAM = re.compile(r"([?&]password=).*\Z", re.IGNORECASE | re.DOTALL)
URL_FORMS = (
    "redis://[user:password@]host[:port][/db], rediss://... (TLS) or unix://[user:password@]/path/to/socket[?db=N]"
)


def _split_userinfo(url: str) -> tuple[str, str | None, str] | None:
    """(scheme://, user part or None, rest) without parsing the way redis-py does: everything
    between "://" and the last "@" is the user part, since a password may hold / # ? @ or :."""
    m = _SCHEME.match(url)
    if not m:
        return None
    scheme, rest = url[: m.end()], url[m.end() :]
    if "@" not in rest:
        return scheme, None, rest
    userinfo, _, rest = rest.rpartition("@")
    return scheme, userinfo, rest


def redact(url: str) -> str:
    """The URL with anything that may be a password replaced by ***, for messages and logs: of
    the user part only a user name before a ":" is kept, a password= query parameter hides the
    rest of the URL, and a string that is not scheme://... is not shown at all."""
    parts = _split_userinfo(url)
    if parts is None:
        return "(not shown: not a URL)"
    scheme, userinfo, rest = parts
    if userinfo is not None:
        user, colon, _ = userinfo.partition(":")
        rest = (f"{user}:***@" if colon else "***@") + rest
    return scheme + _PASSWORD_PARAM.sub(r"\1***", rest)


def check_url(url: str) -> None:
    """Refuse a URL that redis-py would misread: a password holding / ? or # unencoded would be
    taken for the host, port or path (and a piece of it could end up in an error message)."""
    parts = _split_userinfo(url)
    if parts is None or (parts[1] is not None and any(c in parts[1] for c in "/?#")):
        raise ServerUnavailable(
            f"NARRATE_REDIS_URL {redact(url)} is not a valid Redis URL: use {URL_FORMS}, "
            "with / ? # @ : in the password percent-encoded (%2F %3F %23 %40 %3A)"
        )


def _reason(e: BaseException) -> str:
    """Why a connection failed, from the OS error under redis-py's message (its message names
    the host and port as redis-py parsed them, which is not printed)."""
    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, TimeoutError | redis.TimeoutError):
            return "timed out"
        if isinstance(seen, OSError) and seen.strerror:
            return seen.strerror
        seen = seen.__cause__ or seen.__context__
    return "no answer"


PATIENT_CAP_S = 4.0  # longest wait between two tries of a patient (worker) connection


def _retry(patient: bool, patience_s: int) -> Retry:
    """Workers ride out a Redis outage of `patience_s` (NARRATE_REDIS_PATIENCE_S); the CLI gives up
    within seconds. Waits grow 0.25, 0.5, 1, 2 s, then 4 s each."""
    if patient:
        return Retry(ExponentialBackoff(cap=PATIENT_CAP_S, base=0.25), math.ceil(patience_s / PATIENT_CAP_S) + 4)
    return Retry(ExponentialBackoff(cap=0.5, base=0.1), 2)


class Connection:
    """Context manager: ``with Connection(settings) as conn: conn.redis ...``.

    ``patient=True`` (workers): commands are retried through an outage of NARRATE_REDIS_PATIENCE_S."""

    def __init__(self, settings: Settings, patient: bool = False):
        self.settings = settings
        self.patient = patient
        self.embedded: EmbeddedServer | None = None
        self._redis: Redis | None = None

    @property
    def redis(self) -> Redis:
        """The client, while the connection is open (inside ``with Connection(...)``, or between
        ``open()`` and ``close()``)."""
        if self._redis is None:
            raise RuntimeError("the Redis connection is not open: use it inside `with Connection(...)`")
        return self._redis

    @property
    def url(self) -> str:
        """The server URL, safe to print (password redacted)."""
        if self.embedded is not None:
            return self.embedded.url
        return redact(self.settings.redis_url or "")

    def open(self) -> Redis:
        if self.settings.redis_url is None:
            self.embedded = EmbeddedServer(self.settings.home)
            self.embedded.acquire()
            # No health-check PING: over a local unix socket a dead server shows at once (and is
            # retried), and a server that cannot persist refuses PING (MISCONF), which would fail
            # every read, `narrate status` included.
            self._redis = self.embedded.client(
                retry=_retry(self.patient, self.settings.redis_patience_s),
                retry_on_error=[redis.ConnectionError, redis.TimeoutError],
            )
            return self._redis
        url = self.settings.redis_url
        check_url(url)
        try:
            client = redis.Redis.from_url(url, socket_connect_timeout=5, health_check_interval=30)
            client.ping()  # fail fast on the first contact, then retry through outages
            client = redis.Redis.from_url(
                url,
                socket_connect_timeout=5,
                health_check_interval=30,
                retry=_retry(self.patient, self.settings.redis_patience_s),
                retry_on_error=[redis.ConnectionError, redis.TimeoutError],
            )
        except (ValueError, TypeError):  # its text may quote a piece of the URL: not shown
            raise ServerUnavailable(
                f"NARRATE_REDIS_URL {redact(url)} is not a valid Redis URL: use {URL_FORMS}"
            ) from None
        except redis.AuthenticationError:
            raise ServerUnavailable(f"Redis at {redact(url)} refused the password; check NARRATE_REDIS_URL") from None
        except (redis.ConnectionError, redis.TimeoutError, OSError) as e:
            raise ServerUnavailable(
                f"Redis at {redact(url)} did not answer ({_reason(e)}); start it, fix NARRATE_REDIS_URL, "
                "or unset it to use the embedded server"
            ) from None
        self._redis = client
        return client

    def close(self) -> None:
        if self._redis is not None:
            self._redis.close()
            self._redis = None
        if self.embedded is not None:
            self.embedded.release()
            self.embedded = None

    def __enter__(self) -> Connection:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# Blocking reads (XREAD BLOCK: a speech request waiting for its clip's pieces, a worker's clip watch
# waiting for a clip job) each have a client of their own: a connection held for the whole block,
# whose read timeout is longer than the block (redis-py's default of 5 s would cut a longer block
# short), and no retry (a retried block would wait a second time; the caller looks again itself).
BLOCK_MARGIN_S = 5.0


def _server_url(settings: Settings) -> str:
    """The server's URL: NARRATE_REDIS_URL, or the embedded server's unix socket (running: the
    process that asks holds a Connection to it)."""
    return settings.redis_url or EmbeddedServer(settings.home).url


def blocking_client(settings: Settings, block_s: float) -> Redis:
    """A client of its own for blocking reads of at most `block_s` (one connection, no retry)."""
    return redis.Redis.from_url(
        _server_url(settings),
        socket_timeout=block_s + BLOCK_MARGIN_S,
        socket_connect_timeout=5,
        retry=Retry(NoBackoff(), 0),
        single_connection_client=True,
    )


def async_blocking_client(settings: Settings, block_s: float) -> redis.asyncio.Redis:
    """An asyncio client of its own for blocking reads of at most `block_s`: waiting holds no thread,
    and a cancelled wait (a client gone, the server stopping) ends at once."""
    return redis.asyncio.Redis.from_url(
        _server_url(settings),
        socket_timeout=block_s + BLOCK_MARGIN_S,
        socket_connect_timeout=5,
        retry=AsyncRetry(NoBackoff(), 0),
        single_connection_client=True,
    )
