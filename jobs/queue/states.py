"""A job's state, in one vocabulary: narrate's words (rq's, what the CLI prints and `narrate list --status` takes)
and, for each, the word the HTTP API and the pages use (OpenAI Batch's: in_progress, completed, cancelled). rq's
other states fold in: a deferred job (a fanned-out book waiting for its parts) is queued, a stopped one (rq's own
stop) failed."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, get_args


class State(StrEnum):
    QUEUED = "queued"
    SCHEDULED = "scheduled"
    STARTED = "started"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELED = "canceled"

    @property
    def api(self) -> str:
        """The HTTP API's word for it."""
        return _API.get(self, self.value)

    @property
    def ended(self) -> bool:
        return self in (State.FINISHED, State.FAILED, State.CANCELED)

    @classmethod
    def of(cls, raw: str) -> State:
        """The state of a job whose record says `raw` (rq's words; "unknown": a record without one). A word no rq
        release here writes counts as queued, as a record without a state does: a page never fails on it."""
        return _FOLDED.get(raw) or cls.__members__.get(raw.upper(), cls.QUEUED)

    @classmethod
    def from_api(cls, word: str) -> State:
        """The state the API calls `word` (ValueError for a word it does not use)."""
        for state in cls:
            if state.api == word:
                return state
        raise ValueError(f"{word!r} is not a narration's status")


_API = {State.STARTED: "in_progress", State.FINISHED: "completed", State.CANCELED: "cancelled"}
_FOLDED = {"deferred": State.QUEUED, "created": State.QUEUED, "unknown": State.QUEUED, "stopped": State.FAILED}
ENDED_API = tuple(s.api for s in State if s.ended)  # the API's words for a narration that will not change
# The API's words as a type (the OpenAPI schema's enum), checked against State here so that they never part.
ApiWord = Literal["queued", "scheduled", "in_progress", "completed", "failed", "cancelled"]
if set(get_args(ApiWord)) != {s.api for s in State}:  # pragma: no cover - a word added to one and not the other
    raise ImportError("jobs.queue.states: ApiWord and State disagree")
