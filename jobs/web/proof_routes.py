"""`GET /v1/narrations/{id}/proof`: the proof report of a narration submitted with `proof` (jobs/api/proof_report.py):
its counts and each sentence whose first take was flagged, placed in the book file. 404: no such narration; 409
(`not_proofed`): one submitted without `proof`; while it runs, its counts so far and no sentences."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from narrate.jobs.api import proof_report as proofs
from narrate.jobs.queue.states import State
from narrate.jobs.web import views
from narrate.jobs.web.auth import SIGNED_IN
from narrate.jobs.web.errors import ApiError, documented
from narrate.jobs.web.schemas import ProofReport
from narrate.jobs.web.state import Web, WebDep

router = APIRouter(tags=["narrations"], dependencies=[SIGNED_IN])


@router.get("/v1/narrations/{narration_id}/proof", response_model=ProofReport, responses=documented(401, 403, 404, 409))
def get_proof(web: WebDep, narration_id: str) -> dict[str, Any]:
    """The proof pass of a narration: the recognizer, sentences heard, flagged, retaken, fixed and still flagged,
    and (once completed) each flagged sentence: its chapter, start and end in the book file (`audio_url`), its
    text as written and as spoken, what its kept take was heard as, what is wrong, every take tried (seed and
    verdict), and whether it is fixed or still flagged. 409 for a narration submitted without `proof`."""
    return report(web, narration_id)


def report(web: Web, narration_id: str) -> dict[str, Any]:
    """The report as the API and the Job page show it: the API's state, the book file's URL where it is here."""
    job_id = views.check_id(narration_id)
    try:
        rep = proofs.report(web.redis, job_id)
    except proofs.NotProofed:
        raise ApiError(
            409,
            f"narration {job_id} was submitted without proof: nothing heard its sentences back; "
            "submit it again with proof=auto",
            code=proofs.NotProofed.code,
        ) from None
    audio = rep.pop("audio")
    here = {f.name for f in views.files_of(web.redis, web.settings, job_id)} if audio else set()
    return {
        **rep,
        "object": "narration.proof",
        "status": State.of(rep["status"]).api,
        "audio_url": views.file_url(job_id, audio) if audio in here else None,
    }
