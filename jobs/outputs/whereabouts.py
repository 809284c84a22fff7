"""Why a finished job's output is not here: the one diagnosis `narrate export`, `narrate fetch`, the
JSON API and the pages word. A job records where it wrote (the result's ``output``: the absolute
path on its host, under the output root the worker pinned, joined with ``output_relative``) and who
ran it (the meta's ``hostname``), so a reader that cannot find the file tells apart:

- ``other_host``: another host wrote it (`narrate fetch` copies it here through Redis);
- ``other_root``: this host wrote it, under another output root: ``NARRATE_OUTPUT_DIR`` differs
  between the worker (or `narrate run`, whose root is its output's folder) and this process;
- ``changed``: it is where it was written, but not what the job wrote (edited or replaced since);
- ``gone``: this host and this root, and no file there: deleted or moved since.
"""

from __future__ import annotations

import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import redis
from narrate.jobs.server.records import find

REASONS = ("other_host", "other_root", "changed", "gone")


@dataclass(frozen=True)
class Missing:
    job_id: str
    reason: str  # one of REASONS
    path: str  # where the job wrote its output, on its host
    host: str  # the host that wrote it ("" when the job does not say)
    root: str  # the output root it wrote under ("" when it cannot be told)
    here_host: str  # this host
    here_root: str  # this process's output root

    @property
    def message(self) -> str:
        j = self.job_id
        if self.reason == "other_host":
            return (
                f"job {j}'s output was written on host {self.host} ({self.path} there), not on this host "
                f"({self.here_host}): `narrate fetch {j} -o FILE` copies it here (through Redis, from that "
                f"host's `narrate worker`), or read it on {self.host}"
            )
        if self.reason == "other_root":
            return (
                f"job {j}'s output was written on this host under the output root {self.root} ({self.path}), "
                f"but this process's output root is {self.here_root}: NARRATE_OUTPUT_DIR differs between the "
                f"worker that wrote it (or `narrate run`, whose root is its output's folder) and this process; "
                f"set NARRATE_OUTPUT_DIR={self.root} here (or give the worker this process's root and submit again)"
            )
        if self.reason == "changed":
            return (
                f"job {j}'s output {self.path} was changed or replaced since the job wrote it (its checksum "
                "differs): narrate only serves and exports what it wrote; submit the document again to remake it"
            )
        return (
            f"job {j}'s output {self.path} is not there any more (deleted or moved since the job wrote it); "
            "submit the document again to remake it"
        )

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "message": self.message}


def run_root(output: Path, root: Path) -> Path:
    """`narrate run`'s output root: the output root (NARRATE_OUTPUT_DIR) when its output lies under
    it, so the server, `export` and the pages find the book there as they find a worker's; else the
    output's own folder (a run may write anywhere it can)."""
    base = os.path.realpath(Path(root).expanduser())
    folder = os.path.realpath(output.parent)
    return Path(base) if Path(folder).is_relative_to(base) else output.parent


def written_root(result: dict[str, Any]) -> str:
    """The output root the job wrote under: its absolute output less its relative path."""
    output, rel = str(result.get("output") or ""), str(result.get("output_relative") or "")
    parts = PurePosixPath(rel).parts
    if not output or not parts or not Path(output).is_absolute():
        return ""
    path = Path(output)
    if path.parts[-len(parts) :] != parts:
        return ""
    return str(path.parents[len(parts) - 1])


def diagnose(
    job_id: str, result: dict[str, Any], meta: dict[str, Any], root: Path | str, changed: bool = False
) -> Missing:
    """Why job `job_id`'s output (its `result` and `meta` as stored) is not found under this
    process's output root `root`: call it once the reader found nothing it may serve (`changed`:
    it found the file here, with another checksum)."""
    here_host = socket.gethostname()
    here_root = os.path.realpath(Path(root).expanduser())
    host = str(meta.get("hostname") or "")
    wrote_root = written_root(result)
    path = str(result.get("output") or "")
    facts = {
        "job_id": job_id,
        "path": path,
        "host": host,
        "root": wrote_root,
        "here_host": here_host,
        "here_root": here_root,
    }
    if changed:
        return Missing(reason="changed", **facts)
    if host and host != here_host:
        return Missing(reason="other_host", **facts)
    if wrote_root and os.path.realpath(wrote_root) != here_root:
        return Missing(reason="other_root", **facts)
    rel = str(result.get("output_relative") or "")
    if rel and os.path.isfile(os.path.join(here_root, rel)):
        return Missing(reason="changed", **facts)
    return Missing(reason="gone", **facts)


def explain(r: redis.Redis, job_id: str, root: Path | str) -> Missing | None:
    """`diagnose` for a finished job read from Redis (None when it is gone or has no result)."""
    job = find(r, job_id)
    if job is None:
        return None
    result = job.return_value(refresh=True) or {}
    if not isinstance(result, dict) or not result.get("output"):
        return None
    return diagnose(job_id, result, job.meta or {}, root)
