"""The API's bodies as pydantic models: what /openapi.json documents and what responses are checked
against (the schema test walks every documented path)."""

from __future__ import annotations

from typing import Any, Literal

from narrate.jobs.queue.states import ApiWord
from pydantic import BaseModel, ConfigDict, Field


class Output(BaseModel):
    name: str = Field(description="Relative to the book's folder: book.mp3, book.srt, book/01 - One.mp3")
    url: str
    bytes: int
    duration_s: float | None


class Chapter(BaseModel):
    title: str
    start_s: float | None = Field(None, description="where it starts in the book, once finished")
    sentences_done: int | None = Field(None, description="while it is being read")
    sentences_total: int | None = None
    audio_url: str | None = Field(None, description="while the rest is read: the chapter's audio (AAC), once encoded")


class Progress(BaseModel):
    sentences_done: int
    sentences_total: int
    audio_s: float
    realtime_factor: float | None
    eta_s: float | None
    chapters: list[Chapter]


class Narration(BaseModel):
    id: str
    object: Literal["narration"] = "narration"
    status: ApiWord
    created_at: str | None
    started_at: str | None = None
    ended_at: str | None = None
    scheduled_for: str | None = None
    priority: str | None = None
    document: str | None = None
    voice: str | None = None
    host: str | None = Field(None, description="the host (or hosts, for a book fanned out) working on it")
    progress: Progress
    duration_s: float | None = None
    voices: dict[str, dict[str, float]] | None = Field(
        None, description="a cast, once finished: each voice's sentences and seconds (None: one voice)"
    )
    outputs: list[Output]
    files_missing: dict[str, str] | None = Field(
        None, description="completed, no files here: why (reason other_host | other_root | changed | gone, message)"
    )
    error: str | None = None
    proof: ProofCounts | None = Field(
        None, description="with proof: its counts (so far, while it runs); GET .../proof lists the flagged sentences"
    )
    stopping: bool = Field(False, description="a running narration asked to cancel: it stops within a second")
    duplicate: str | None = Field(
        None, description="on POST: what the identical earlier request was (queued, scheduled, done, resumed...)"
    )
    redo_of: str | None = Field(None, description="a redo (POST .../redo): the narration it renders again")
    redo: RedoDone | None = Field(None, description="a redo: the sentences it renders again and the takes it accepts")
    superseded_by: str | None = Field(None, description="redone: the narration whose files replaced this one's")
    note: str | None = None
    action: str | None = Field(None, description="on cancel and resume: what was done, in words")
    outcome: str | None = Field(
        None,
        description="on cancel and resume: what was done, as a code (cancel: canceled, canceled_gone, stopping, "
        "already_canceled, already_stopping; resume: requeued, requeued_gone, book_stitches, book_waits, "
        "kept_canceled)",
    )


class RedoDone(BaseModel):
    sentences: list[int] = Field(description="rendered again, numbered as the subtitles count them (1 first)")
    accepted: list[int] = Field(description="takes accepted as they are (1 first)")


class ProofCounts(BaseModel):
    model: str | None = Field(None, description="the recognizer (none yet: not heard yet)")
    checked: int = Field(0, description="sentences heard")
    flagged: int = Field(0, description="sentences whose first take was flagged")
    retaken: int = Field(0, description="sentences synthesized again")
    still_flagged: int = Field(0, description="sentences whose kept take is still flagged")
    retakes: int = Field(0, description="takes synthesized again, in all")
    reasons: dict[str, int] = Field(default_factory=dict, description="each reason's count among the still flagged")


class ProofTake(BaseModel):
    seed: int
    ok: bool
    reasons: list[str]
    said: str = Field(description="its verdict in words: what is wrong with it")
    wer: float = Field(description="word error rate against the sentence as spoken")
    transcript: str = Field(description="what the recognizer heard")
    kept: bool = Field(description="the take in the book")


class ProofSentence(BaseModel):
    index: int = Field(description="the sentence's number in the book, 0 first (the read-along's `sentence-N`)")
    chapter: int | None = Field(None, description="its chapter's number in the book's chapter list, 1 first")
    chapter_title: str | None = None
    start_s: float | None = Field(None, description="where it starts in the book file, in seconds")
    end_s: float | None = Field(None, description="where it ends (its pause not included)")
    text: str = Field(description="the sentence as the document writes it")
    spoken: str = Field(description="the sentence as narrate speaks it (numbers in words, the lexicon)")
    transcript: str = Field(description="what the kept take was heard as")
    outcome: Literal["fixed", "still_flagged"]
    reasons: list[str] = Field(description="what is wrong with the kept take (none once fixed)")
    flagged_for: list[str] = Field(description="what was wrong with its first take")
    problem: str = Field(description="what is wrong, in words")
    kept: int = Field(description="the kept take's place in `takes`, 0 first")
    takes: list[ProofTake]


class ProofReport(ProofCounts):
    id: str
    object: Literal["narration.proof"] = "narration.proof"
    status: ApiWord
    complete: bool = Field(description="completed, its result read: the sentences are listed (before: counts so far)")
    fixed: int | None = Field(None, description="flagged sentences whose kept take is ok (once complete)")
    sentences: list[ProofSentence] | None = Field(
        description="each sentence whose first take was flagged, in reading order (null: its worker did not list them)"
    )
    sentences_left_out: int = Field(0, description="flagged sentences beyond what a result lists (1,000)")
    audio_url: str | None = Field(None, description="the book file the times are in")
    duration_s: float | None = None


class NarrationList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Narration]
    has_more: bool = False
    first_id: str | None = None
    last_id: str | None = None


class Deleted(BaseModel):
    id: str
    object: Literal["narration.deleted"] = "narration.deleted"
    deleted: bool
    files: list[str]


class RedoRequest(BaseModel):
    """`POST /v1/narrations/{id}/redo`: `narrate redo`'s arguments. Sentences are numbered as the subtitles and the
    proof report's `sentence` count them, 1 first (the report's `index` + 1)."""

    model_config = ConfigDict(extra="forbid")

    sentences: list[int] = Field(default_factory=list, description="sentences to render again (1 first)")
    flagged: bool = Field(False, description="also every sentence the proof pass left flagged and nobody accepted")
    seed: int | None = Field(None, description="render them with this seed (default: each one's next seed)")
    text: str | None = Field(None, description="one sentence's corrected text (the subtitles show it too)")
    lexicon: dict[str, str] | None = Field(
        None, description="lexicon entries for these sentences only: {word: spoken form}"
    )
    accept: list[int] = Field(default_factory=list, description="takes to keep as they are: not flagged again")
    priority: Literal["high", "normal", "low"] = "high"


class Redo(BaseModel):
    id: str = Field(description="the redo's narration: it replaces this one's files once it has completed")
    object: Literal["narration.redo"] = "narration.redo"
    redo_of: str
    sentences: list[int] = Field(description="rendered again (1 first)")
    accepted: list[int] = Field(description="takes accepted (1 first)")
    texts: dict[str, str] = Field(description="each of them (by its number) as the document, or a redo, writes it")
    duplicate: str | None = Field(
        None, description="the same redo was asked before: queued (waiting or running), done, or resumed"
    )
    note: str | None = None
    narration: Narration = Field(description="the redo's narration, as GET /v1/narrations/{id} shows it")


class SpeechRequest(BaseModel):
    """OpenAI's `POST /v1/audio/speech` body, and narrate's `language` and `seed`."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(description="tts-1, tts-1-hd and gpt-4o-mini-tts are the server's default model")
    input: str = Field(description="At most 4,096 characters (longer: 413; narrate a document with /v1/narrations)")
    voice: str | dict[str, str] = Field(
        description="A saved voice's name, a preset speaker, an OpenAI voice name mapped by NARRATE_OPENAI_VOICES, "
        'a sample as a data: URL (data:audio/wav;base64,...), or {"id": NAME}'
    )
    instructions: str | None = None
    response_format: Literal["mp3", "opus", "aac", "flac", "wav", "pcm"] = "mp3"
    speed: float = Field(1.0, description="1.0 only (any other: 400)")
    stream_format: Literal["audio", "sse"] = "audio"
    language: str | None = Field(None, description="narrate: the input's language (auto: detected)")


class Model(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]


class Voice(BaseModel):
    """Kokoro-FastAPI's list entry (`id`, `name`), with narrate's record."""

    model_config = ConfigDict(extra="allow")

    id: str
    name: str
    kind: str
    description: str | None = None
    created_at: str | None = None
    sha256: str | None = None
    seconds: float | None = None
    speaker: str | None = None


class VoiceList(BaseModel):
    voices: list[Voice]


class VoiceDeleted(BaseModel):
    id: str
    object: Literal["voice.deleted"] = "voice.deleted"
    deleted: bool
    kept_by: list[str] = Field(default_factory=list, description="jobs and schedules that keep their own copy")


def multipart(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """`openapi_extra` of a route that reads its multipart body itself (jobs/web/uploads.py)."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": schema}}}}


def text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def binary(description: str) -> dict[str, Any]:
    return {"type": "string", "format": "binary", "description": description}


def sse(events: list[str]) -> dict[str, Any]:
    """The schema of one server-sent event (`event:` one of `events`, `data:` a JSON object)."""
    return {
        "schema": {
            "type": "object",
            "required": ["data"],
            "properties": {"event": {"type": "string", "enum": events}, "data": {"type": "string"}},
        }
    }
