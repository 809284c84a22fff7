"""uvicorn's log without secrets: a podcast app's feed URL carries the feed's token (`?token=`), and
uvicorn's access log prints each request's path with its query. `RedactSecrets` replaces the value
of every query parameter named `token`, `key` or ending in either (`api_key`, `access_token`; as
sent or percent-encoded) with `[redacted]`, in each record of the handlers of `log_config()`, the
logging setup `narrate serve` gives uvicorn (which also shows narrate's own lines, through them)."""

from __future__ import annotations

import copy
import logging
import re
from typing import Any
from urllib.parse import unquote

REDACTED = "[redacted]"
_PARAM = re.compile(r"([?&])([^=&#\s]*)=([^&#\s]*)")


def _secret_name(name: str) -> bool:
    plain = unquote(unquote(name)).strip().lower().replace("-", "_")
    return plain.endswith(("token", "key"))


def redact(text: str) -> str:
    """`text` with the values of secret query parameters replaced (anywhere a `?` or `&` starts one)."""
    if "=" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        return f"{m.group(1)}{m.group(2)}={REDACTED}" if _secret_name(m.group(2)) and m.group(3) else m.group(0)

    return _PARAM.sub(one, text)


class RedactSecrets(logging.Filter):
    """Redacts secret query values in a record's message and arguments (uvicorn's access record:
    client, method, path with query, HTTP version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: redact(v) if isinstance(v, str) else v for k, v in record.args.items()}
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's own logging setup with `RedactSecrets` on each of its handlers."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["narrate_redact"] = {"()": f"{__name__}.RedactSecrets"}
    for handler in config.get("handlers", {}).values():
        handler["filters"] = [*handler.get("filters", []), "narrate_redact"]
    # narrate's own lines (callbacks sent or failed, requests that failed) through the same handler
    config.setdefault("loggers", {})["narrate"] = {"handlers": ["default"], "level": "INFO", "propagate": False}
    return config
