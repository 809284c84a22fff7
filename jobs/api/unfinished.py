"""What a command that needs a finished job (`narrate export`, `narrate fetch`) says about one that is
not: its state in words (a fanned-out book's as `narrate status` folds it from its parts), why it failed,
and the command that moves it on."""

from __future__ import annotations

import redis
from narrate.jobs.api.status import status
from narrate.jobs.errors import Conflict


class NotFinished(Conflict):
    """A command that needs a finished job was given one that is not (facts: `job_id`, `state` as `narrate status`
    says it, `doing`: the command's verb). A Conflict: the HTTP API's 409."""

    code = "not_finished"

    def __init__(self, message: str, job_id: str, state: str, doing: str) -> None:
        super().__init__(message, facts={"job_id": job_id, "state": state, "doing": doing})


def not_finished(r: redis.Redis, job_id: str, doing: str) -> NotFinished | None:
    """None when job `job_id` has finished; else the error to raise, e.g. "cannot export job X: it failed:
    <reason>; `narrate resume X` retries it". `doing`: the command's verb ("export", "fetch")."""
    shown = status(r, job_id)
    state = str(shown.get("status") or "unknown")
    if state == "finished":
        return None
    resume = f"`narrate resume {job_id}`"
    watch = f"`narrate watch {job_id}`"
    if state == "failed":
        why = str(shown.get("error") or "see its worker's log").strip()
        said = f"it failed: {why}; {resume} retries it"
    elif state in ("canceled", "stopped"):
        said = f"it was {state}; {resume} runs it again"
    elif state == "started":
        progress = shown.get("progress") or {}
        done, total = int(progress.get("done") or 0), int(progress.get("total") or 0)
        so_far = f" ({done} of {total} sentences done)" if total else ""
        said = f"it is still running{so_far}; {watch} follows it, then {doing} it once it has finished"
    elif state == "scheduled":
        due = shown.get("scheduled_for")
        said = f"it is scheduled{f' for {due}' if due else ''} and has not started; {doing} it once it has finished"
    elif state == "queued":
        said = f"it is queued and has not started yet; {watch} follows it, then {doing} it once it has finished"
    elif state == "deferred":
        said = f"it is waiting for its parts to finish; {watch} follows it, then {doing} it once it has finished"
    else:
        said = f"it has not finished (its state: {state}); `narrate status {job_id}` says more"
    return NotFinished(f"cannot {doing} job {job_id}: {said}", job_id, state, doing)
