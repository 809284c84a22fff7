"""Priorities: each narrate queue name (NARRATE_QUEUE, ``--queue``) stands for three rq queues,
``NAME-high``, ``NAME`` and ``NAME-low``, which a worker takes in that order (the first job of the
first non-empty one: narrate.jobs.queue.claims)."""

from __future__ import annotations

from narrate.jobs.errors import BadInput

PRIORITIES = ("high", "normal", "low")
_SUFFIX = {"high": "-high", "normal": "", "low": "-low"}


def check_priority(priority: str) -> str:
    if priority not in PRIORITIES:
        raise BadInput(f"unknown priority {priority!r}: use one of {', '.join(PRIORITIES)}")
    return priority


def queue_for(base: str, priority: str = "normal") -> str:
    """The rq queue that holds `base`'s jobs of this priority."""
    return base + _SUFFIX[check_priority(priority)]


def queue_names(base: str) -> list[str]:
    """The rq queues of `base`, highest priority first (the order a worker takes them in)."""
    return [queue_for(base, p) for p in PRIORITIES]


def priority_of(queue_name: str) -> str:
    """The priority of a job that lives in `queue_name`."""
    for p in ("high", "low"):
        if queue_name.endswith(_SUFFIX[p]):
            return p
    return "normal"
