"""The proof report of a narration (`narrate proof`, `GET /v1/narrations/{id}/proof`, the Job page): the counts of
its proof pass and the sentences whose first take was flagged, read from the job's result (jobs/proof/report.py),
so any host with the Redis server shows it; while the job runs, its counts so far. A job narrated without
`--proof` has no report (NotProofed: the API's 409)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import redis
from narrate.jobs.api.status import status
from narrate.jobs.errors import Conflict
from narrate.jobs.server.records import fetch

COUNTS = ("checked", "flagged", "retaken", "still_flagged", "retakes")


class NotProofed(Conflict):
    """The job was not narrated with --proof: nothing heard it back."""

    code = "not_proofed"


def asked_proof(r: redis.Redis, job_id: str) -> bool:
    """Whether the job was submitted with --proof (its spec says so); raises JobNotFound."""
    job = fetch(r, job_id)
    try:
        args = job.args
    except Exception:  # noqa: BLE001 - a record whose data cannot be read asked for nothing we can see
        return False
    spec = args[0] if args and isinstance(args[0], dict) else {}
    return bool(spec.get("proof"))


def report(r: redis.Redis, job_id: str) -> dict[str, Any]:
    """The proof report of `job_id`; raises JobNotFound (no such job) and NotProofed (no --proof).

    ``complete``: the job finished and its result has the report; before that the counts are those so far and
    ``sentences`` is empty. ``sentences`` is None for a job finished by a worker that did not list them."""
    if not asked_proof(r, job_id):
        raise NotProofed(
            f"job {job_id} was not narrated with --proof: nothing heard its sentences back "
            "(submit the document again with --proof)",
            facts={"job": job_id},
        )
    st = status(r, job_id)
    result = st.get("result") or {}
    complete = st["status"] == "finished" and isinstance(result.get("proof"), dict)
    proof = (result.get("proof") if complete else st.get("proof")) or {}
    got = proof.get("sentences")
    output = result.get("output_relative")
    return {
        "id": job_id,
        "status": st["status"],
        "complete": complete,
        **counts_of(proof, complete),
        "sentences": list(got) if isinstance(got, list) else None if complete else [],  # None: not listed (older)
        "sentences_left_out": int(proof.get("sentences_left_out") or 0),
        "audio": PurePosixPath(output).name if complete and output else None,  # the book file, among its outputs
        "duration_s": result.get("duration_seconds") if complete else None,
    }


def counts_of(proof: dict[str, Any], complete: bool) -> dict[str, Any]:
    """The recognizer and the counts of a result's or a running job's `proof`, with ``fixed``: the flagged
    sentences whose kept take is ok (None until the job is complete: some may still wait for a retake)."""
    counts = {k: int(proof.get(k) or 0) for k in COUNTS}
    fixed = counts["flagged"] - counts["still_flagged"] if complete else None
    return {"model": proof.get("model"), **counts, "fixed": fixed, "reasons": dict(proof.get("reasons") or {})}


def summary_line(rep: dict[str, Any]) -> str:
    """The counts in one line (`narrate status`, `narrate proof`): 24 checked, 2 flagged, 2 retaken (4 retakes), 1
    fixed, 1 still flagged (dropped 1) by MODEL."""
    if not rep.get("model"):
        return "not heard yet"
    parts = [f"{rep['checked']} checked", f"{rep['flagged']} flagged"]
    if rep["retaken"]:
        parts.append(f"{rep['retaken']} retaken ({rep['retakes']} retakes)")
    if rep.get("fixed") is not None:
        parts.append(f"{rep['fixed']} fixed")
    parts.append(f"{rep['still_flagged']} still flagged")
    reasons = ", ".join(f"{k} {v}" for k, v in (rep.get("reasons") or {}).items())
    return ", ".join(parts) + (f" ({reasons})" if reasons else "") + f" by {rep['model']}"
