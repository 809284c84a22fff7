"""Sentences of a finished narration rendered again, or their takes accepted, as `narrate redo` does it
(jobs/api/redo_request.py): `POST /v1/narrations/{id}/redo` (JSON) and the Job page's Redo, Accept, corrected-text and
Redo all flagged buttons (`POST /jobs/{id}/redo`, a form answered by a redirect to the new job). Both parse, call
the same function as the command line, and render; a submission each, counted by the guard (jobs/web/guard.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from narrate.jobs.api import redo_request as redoing
from narrate.jobs.documents.lexicon import lexicon_of
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.web import flash, views
from narrate.jobs.web.auth import SIGNED_IN
from narrate.jobs.web.errors import ApiError, documented
from narrate.jobs.web.pages import back_to, form_fields
from narrate.jobs.web.schemas import Redo, RedoRequest
from narrate.jobs.web.state import Web, WebDep
from starlette.concurrency import run_in_threadpool

router = APIRouter(tags=["narrations"], dependencies=[SIGNED_IN])
pages = APIRouter(include_in_schema=False, dependencies=[SIGNED_IN])
# The Job page names the options by its own controls.
PAGE = redoing.Words(accept="Accept", flagged="Redo all flagged", text="the corrected text", seed="seed", proof="proof")
DUPLICATE = {"queued": "already queued or running", "done": "already done", "resumed": "resumed"}


@router.post(
    "/v1/narrations/{narration_id}/redo",
    status_code=202,
    response_model=Redo,
    responses=documented(400, 401, 403, 404, 409, 413, 422, 429, 503),
)
def redo(web: WebDep, narration_id: str, body: RedoRequest, response: Response) -> dict[str, Any]:
    """Render `sentences` of a completed narration again (1 first, as its subtitles and its proof report's
    `sentence` count them; `flagged`: those its proof pass left flagged) with another `seed` (default: each one's
    next), a corrected `text` (one sentence) or `lexicon` entries of their own, and/or `accept` takes as they are,
    as a new narration that re-renders only those sentences and stitches the book again from the sentence cache:
    202 and the new narration (`Location` its URL). Once completed it replaces the old one's files, takes its
    place in its feeds and library, and the old one's `superseded_by` names it. 404: no such narration; 409 (code
    `not_finished`): not completed; 409 (`not_redoable`): superseded, its output replaced since, its document
    expired, or not a book's narration; 400 (`param`: the field) for a sentence not in the book and the like."""
    change = redoing.Change(
        sentences=tuple(body.sentences),
        seed=body.seed,
        text=body.text,
        lexicon=lexicon_of(body.lexicon) if body.lexicon is not None else None,
        accept=tuple(body.accept),
        flagged=body.flagged,
    )
    if body.lexicon is not None and not change.lexicon:
        raise BadInput("lexicon has no entries", param="lexicon")
    done = redoing.redo(web.settings, web.redis, views.check_id(narration_id), change, body.priority, redoing.API)
    response.headers["Location"] = f"/v1/narrations/{done.job.id}"
    return answer(web, done)


def answer(web: Web, done: redoing.Redone) -> dict[str, Any]:
    """What `narrate redo --json` prints, and the new narration."""
    return {
        "id": done.job.id,
        "object": "narration.redo",
        "redo_of": done.of,
        "sentences": done.sentences,
        "accepted": done.accepted,
        "texts": {str(k): v for k, v in sorted(done.texts.items())},
        "duplicate": done.duplicate,
        "note": done.note,
        "narration": views.narration(web.redis, web.settings, done.job.id),
    }


@pages.post("/jobs/{job_id}/redo")
async def redo_page(request: Request, web: WebDep, job_id: str) -> Response:
    """The Job page's buttons on its flagged sentences: `do` is redo (another seed), text (with the corrected
    `text`), accept, or flagged (every sentence still flagged); `sentence` the number. Leads to the new job."""
    return await run_in_threadpool(_redo_page, request, web, job_id, await form_fields(request))


def _redo_page(request: Request, web: Web, job_id: str, form: dict[str, str]) -> RedirectResponse:
    try:
        done = redoing.redo(web.settings, web.redis, views.check_id(job_id), page_change(form), "high", PAGE)
    except (NarrateError, ApiError) as e:
        return back_to(request, f"/jobs/{quote(job_id)}", error=flash.words_of(e))
    return back_to(request, f"/jobs/{quote(done.job.id)}", said=said(done))


def page_change(form: dict[str, str]) -> redoing.Change:
    """The change a button of the Job page asks."""
    do = form.get("do", "")
    if do == "flagged":
        return redoing.Change(flagged=True)
    raw = form.get("sentence", "").strip()
    if not raw.isdigit() or len(raw) > 7:
        raise BadInput(f"sentence {raw[:20]!r} is not a number (1 first)", param="sentences")
    number = int(raw)
    if do == "redo":
        return redoing.Change(sentences=(number,))
    if do == "accept":
        return redoing.Change(accept=(number,))
    if do == "text":
        text = form.get("text", "")
        if " ".join(text.split()) == " ".join(form.get("was", "").split()):
            raise BadInput(
                f"sentence {number}'s text is as it was: change it, or press Redo for another take", param="text"
            )
        return redoing.Change(sentences=(number,), text=text)
    raise BadInput(f"no such action {do[:20]!r} (redo, text, accept or flagged)", param="do")


def said(done: redoing.Redone) -> str:
    """The redo in words, as `narrate redo` prints it."""
    what = [
        f"{_sentences(done.sentences)} rendered again" if done.sentences else "",
        f"{'take' if len(done.accepted) == 1 else 'takes'} {redoing.ranges(done.accepted)} accepted"
        if done.accepted
        else "",
    ]
    line = f"redo of {done.of}: {'; '.join(filter(None, what))}"
    if len(done.texts) == 1:
        [text] = done.texts.values()
        line += f" ({text[:70]}{'...' if len(text) > 70 else ''})"
    if done.duplicate:
        line += f"; the same redo was asked before: {DUPLICATE[done.duplicate]}"
    return line + (f"; {done.note}" if done.note else "")


def _sentences(numbers: list[int]) -> str:
    return f"{'sentence' if len(numbers) == 1 else 'sentences'} {redoing.ranges(numbers)}"
