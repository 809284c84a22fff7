"""One security policy for narrate's two web servers, `narrate serve` (jobs/web/guard.py) and
`narrate dashboard` (jobs/dashboard/guard.py): given a request (its method, path, Host, the headers
a browser sends about where a request comes from, and whether it carries the server's credentials),
`decide` allows it or refuses it with a status and a reason. Pure: no I/O. Each server's guard is a
thin adapter: it reads its request, checks its own credentials (a Bearer key or a session cookie;
basic auth), asks `decide`, and words and sends a refusal its own way. The rules, one set for both:

- Binding: a loopback address (127.0.0.0/8, ::1, localhost: `is_loopback`) may serve without
  credentials; any other address refuses to start without them (each server's check_exposure).
- Host: only the server's own names are answered (`served_hosts`: the loopback names localhost,
  127.0.0.1 and [::1], and the bind address, each with the port and bare on port 80, plus the names
  configured); any other Host is 400. A page whose own name was re-pointed at 127.0.0.1 (DNS
  rebinding) is not "same-origin" with the server.
- Credentials: once the server has them configured, every request but one to a public path needs
  them, on loopback too: 401 without them (or with wrong ones); a browser opening a page of a
  server that has a sign-in form is sent there (303).
- Reads (GET, HEAD, OPTIONS): one carrying a foreign Origin is 403; so is one made by another site's
  page (Sec-Fetch-Site cross-site or same-site) unless it opens a page (a top-level navigation:
  Sec-Fetch-Mode navigate, Sec-Fetch-Dest document); an OPTIONS never does.
- Requests that change state (any other method): Sec-Fetch-Site other than same-origin (or none: the
  person typed it) is 403, and so is an Origin, else a Referer, naming another host (``null`` too).
  One with none of Origin, Referer and Sec-Fetch-Site is served: browsers send Origin with every
  POST and Sec-Fetch-Site with every request, so it is a program's (curl, an SDK, a script), which
  no other site's page can make; it still needs the credentials. (The dashboard refused such a
  request and the API served it; the API's rule is the one, since programs call both.)
- No CORS: neither server ever sends Access-Control-* headers (the guards strip them).
"""

from __future__ import annotations

import enum
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from narrate.jobs.errors import BadInput

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")  # Host names every server answers, with its port
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_NAME = re.compile(r"^(?:[a-z0-9](?:[a-z0-9_-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9_-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])$")


def is_loopback(bind: str) -> bool:
    """`bind` is a loopback address: localhost, or an IP address in 127.0.0.0/8 or ::1 (bracketed or
    not); a name that merely begins with 127., such as 127.evil.example, is not."""
    name = bind.strip().lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


def _split(entry: str) -> tuple[str, int | None]:
    """`name`, `name:port` or `[v6]:port` -> (lower-case name, port or None); ValueError if not one."""
    entry = entry.strip().lower()
    name, sep, port = entry.rpartition(":") if not entry.endswith("]") else (entry, "", "")
    if not sep:
        name, port = entry, ""
    if not _NAME.match(name) or (sep and not (port.isdigit() and 0 < int(port) < 65536)):
        raise ValueError(entry)
    return name, int(port) if sep else None


def served_hosts(
    bind: str, port: int, configured: Iterable[str] = (), setting: str = "NARRATE_SERVE_HOSTS"
) -> frozenset[str]:
    """Host header values a server at `bind`:`port` answers: each loopback name and the bind address
    with the port (bare too on port 80); a configured name with its own port, or without one both
    bare (a reverse proxy on the default port) and with the port. Raises BadInput naming `setting`
    (where the names were configured) for an entry that is not a host name."""
    hosts = set()
    for name in (*LOOPBACK_NAMES, _bracketed(bind.strip().lower())):
        hosts.add(f"{name}:{port}")
        if port == 80:
            hosts.add(name)
    for entry in configured:
        if not entry.strip():
            continue
        try:
            name, own_port = _split(entry)
        except ValueError:
            raise BadInput(
                f"{setting}: {entry.strip()!r} is not a host name; give names such as narrate.example.com or "
                "narrate.example.com:8080, separated by commas",
                param=setting,
            ) from None
        hosts.update({f"{name}:{own_port}"} if own_port else {name, f"{name}:{port}"})
    return frozenset(hosts)


def origin_host(url: str) -> str | None:
    """The host[:port] of an Origin or Referer, as a Host header carries it; None if not http(s)."""
    try:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        name = _bracketed(parts.hostname.lower())
        return f"{name}:{parts.port}" if parts.port is not None else name
    except ValueError:
        return None


class Credential(enum.Enum):
    """What a request carries of the server's credentials (the adapter checks them)."""

    NONE = "none"  # nothing
    WRONG = "wrong"  # something, not the server's (or no longer)
    VALID = "valid"


class Reason(enum.Enum):
    """Why a request is refused."""

    HOST = "host"  # 400: a Host the server does not answer (`said`: it)
    NO_CREDENTIALS = "no_credentials"  # 401
    WRONG_CREDENTIALS = "wrong_credentials"  # 401
    SIGN_IN = "sign_in"  # 303: a browser opening a page without credentials (`location`: the form)
    CROSS_ORIGIN_READ = "cross_origin_read"  # 403: a read with a foreign Origin (`said`: it)
    CROSS_SITE_READ = "cross_site_read"  # 403: a read made by another site's page
    CROSS_SITE_FETCH = "cross_site_fetch"  # 403: a change with Sec-Fetch-Site not same-origin (`said`: it)
    CROSS_SITE_SOURCE = "cross_site_source"  # 403: a change whose Origin/Referer is another host (`said`: it)


STATUS = {Reason.HOST: 400, Reason.NO_CREDENTIALS: 401, Reason.WRONG_CREDENTIALS: 401, Reason.SIGN_IN: 303}


@dataclass(frozen=True)
class Site:
    """One server, as the policy sees it: the Host names it answers, whether it has credentials
    configured, the path prefixes served without them (`public`), those only programs call (`api`:
    never sent to a sign-in form) and its sign-in form (`login`; None: a 401 is the answer)."""

    hosts: frozenset[str]
    credentials_required: bool
    public: tuple[str, ...] = ()
    api: tuple[str, ...] = ()
    login: str | None = None


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: Reason | None = None
    said: str = ""  # the header value the refusal is about, as sent
    location: str | None = None  # SIGN_IN: where the browser is sent

    @property
    def status(self) -> int:
        if self.allowed or self.reason is None:
            return 200
        return STATUS.get(self.reason, 403)


ALLOW = Decision(True)


def _refuse(reason: Reason, said: str = "", location: str | None = None) -> Decision:
    return Decision(False, reason, said, location)


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path.startswith(p) for p in prefixes)


def page_load(headers: Mapping[str, str]) -> bool:
    """A browser opening a page (not a script's or htmx's request)."""
    if headers.get("hx-request"):
        return False
    return headers.get("sec-fetch-mode") == "navigate" or "text/html" in headers.get("accept", "")


def decide(
    site: Site, method: str, path: str, headers: Mapping[str, str], credential: Callable[[], Credential]
) -> Decision:
    """Allow the request or refuse it (see the module docstring). `headers`: its headers by
    lower-case name; `credential`: what it carries of the server's credentials, asked only when they
    matter (a public path, a wrong Host or a server without credentials never asks)."""
    host = headers.get("host", "").strip().lower()
    if host not in site.hosts:
        return _refuse(Reason.HOST, host)
    if site.credentials_required and not _under(path, site.public):
        carried = credential()
        if carried is not Credential.VALID:
            if site.login and method in ("GET", "HEAD") and not _under(path, site.api) and page_load(headers):
                return _refuse(Reason.SIGN_IN, location=f"{site.login}?next={quote(path[:500], safe='/')}")
            return _refuse(Reason.WRONG_CREDENTIALS if carried is Credential.WRONG else Reason.NO_CREDENTIALS)
    origin, fetch_site = headers.get("origin"), headers.get("sec-fetch-site")
    if method in SAFE_METHODS:
        mode, dest = headers.get("sec-fetch-mode"), headers.get("sec-fetch-dest", "document")
        navigation = mode == "navigate" and dest == "document"
        if origin is not None and origin_host(origin) not in site.hosts:
            return _refuse(Reason.CROSS_ORIGIN_READ, origin)
        if fetch_site in ("cross-site", "same-site") and (method == "OPTIONS" or not navigation):
            return _refuse(Reason.CROSS_SITE_READ, fetch_site)
        return ALLOW
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return _refuse(Reason.CROSS_SITE_FETCH, fetch_site)
    source = origin if origin is not None else headers.get("referer")
    if source is not None and origin_host(source) not in site.hosts:
        return _refuse(Reason.CROSS_SITE_SOURCE, source)
    return ALLOW
