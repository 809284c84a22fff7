"""Short clips made by clip jobs (a voice preview, the candidates of a designed voice) and the
designs waiting for `narrate voice keep`, in Redis so that the host that asked can have them
whichever host made them:

- ``narrate:clip:<job id>:<n>``: candidate or preview n (from 1), a 24 kHz mono 16-bit WAV;
- ``narrate:voice-design:<name>``: a design not kept yet (description, line, model, its job)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import redis
from narrate.jobs.book.voice import BadVoiceRef, VoiceRef
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.scripts import load_script
from narrate.jobs.server.store import PREFIX
from narrate.jobs.settings import DAY_S, MAX_FRAMES_CAP, default

# Qwen's own example of a designed voice's line, and a pangram for previews.
PANGRAM = "The quick brown fox jumps over the lazy dog, and then it naps in the warm afternoon sun."
MAX_LINE_CHARS = 400
MAX_CANDIDATES = 8
CLIP_PREFIX = "narrate-clip-"  # the id of every clip job (previews, designs, speech): never a narration


def clip_key(job_id: str, number: int) -> str:
    return f"{PREFIX}clip:{job_id}:{number}"


def parts_key(job_id: str, number: int) -> str:
    """Clip n's samples as they are spoken, a Redis stream: made by the speech request that waits for
    the clip (``open_parts``: no one waits, nothing is written), written by the clip's worker
    (``put_piece``, ``put_clip``'s end), read with XREAD BLOCK (jobs/web/speech_clips.py) and removed
    by the request when it ends, however it ends."""
    return f"{PREFIX}clip:{job_id}:{number}:parts"


PARTS_KEEP_S = 3600  # a stream whose reader went without removing it (a server killed) expires
# The fields of a parts entry: a piece (its 16-bit samples and the byte offset they start at in the
# take that spoke them: a clip given back mid-way speaks again from 0, the same samples), the end
# (the clip is stored whole: clip_key), or the stream's opening by its reader.
PIECE, AT, END, OPENED = b"pcm", b"at", b"end", b"open"


def open_parts(r: redis.Redis, job_ids: list[str], number: int = 1) -> None:
    """Make the parts streams of clips a request is about to wait for (before it first looks at the
    jobs' states: whatever a worker writes from then on is read)."""
    with r.pipeline(transaction=False) as p:
        for job_id in job_ids:
            p.xadd(parts_key(job_id, number), {OPENED: b""})
            p.expire(parts_key(job_id, number), PARTS_KEEP_S)
        p.execute()


def waiters_key(job_id: str) -> str:
    """How many speech requests wait for a clip job right now: identical requests share their clip jobs (the ids
    come from the text), and a clip is cancelled, its stream removed, only when the last of them lets it go."""
    return f"{PREFIX}clip:{job_id}:waiting"


def hold(r: redis.Redis, job_ids: list[str]) -> None:
    """One more request waits for each of these clips (before it enqueues them: a request that lets go of the
    same clip meanwhile sees it held)."""
    with r.pipeline(transaction=False) as p:
        for job_id in dict.fromkeys(job_ids):  # a line said twice in one request is one clip, held once
            p.incr(waiters_key(job_id))
            p.expire(waiters_key(job_id), PARTS_KEEP_S)  # a server killed mid-request: the count goes in time
        p.execute()


_RELEASE = load_script("clip_release")


def release(r: redis.Redis, job_ids: list[str], number: int = 1) -> list[str]:
    """A request lets go of its clips (however it ended); the ids of those no request waits for any more (their
    parts streams removed: the caller cancels what of them is not done, if it went away early)."""
    script = r.register_script(_RELEASE)
    return [
        job_id for job_id in dict.fromkeys(job_ids) if script(keys=[waiters_key(job_id), parts_key(job_id, number)])
    ]


def put_piece(r: redis.Redis | redis.client.Pipeline, job_id: str, number: int, at: int, pcm: bytes) -> None:
    """A piece of clip n's samples, `at` bytes into its take, for the request waiting for it (no
    stream: no one waits, nothing is written)."""
    r.xadd(parts_key(job_id, number), {AT: at, PIECE: pcm}, nomkstream=True)


def draft_key(name: str) -> str:
    return f"{PREFIX}voice-design:{name}"


def put_clip(r: redis.Redis, job_id: str, number: int, wav: bytes, keep_s: int) -> str:
    """Clip n stored whole; a request waiting for it is told at once (the end of its parts stream)."""
    key = clip_key(job_id, number)
    with r.pipeline(transaction=False) as p:
        p.set(key, wav, ex=keep_s)
        p.xadd(parts_key(job_id, number), {END: b""}, nomkstream=True)
        p.execute()
    return key


def get_clip(r: redis.Redis, job_id: str, number: int) -> bytes:
    wav = r.get(clip_key(job_id, number))
    if wav is None:
        raise NarrateError(f"clip {number} of job {job_id} is no longer stored (it expired); make it again")
    assert isinstance(wav, bytes)  # narrate's clients return bytes (decode_responses off)
    return wav


def check_line(text: str | None) -> str:
    line = " ".join((text or PANGRAM).split())
    if not line:
        raise BadInput("--text is empty; give a line to speak")
    if len(line) > MAX_LINE_CHARS:
        raise BadInput(f"--text is {len(line)} characters long; a clip speaks one line of at most {MAX_LINE_CHARS}")
    return line


@dataclass(frozen=True)
class Draft:
    name: str
    description: str
    text: str
    model: str | None
    job_id: str
    seeds: list[int]
    created_at: str

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def put_draft(r: redis.Redis, draft: Draft, keep_s: int) -> None:
    r.set(draft_key(draft.name), draft.to_json(), ex=keep_s)


def get_draft(r: redis.Redis, name: str) -> Draft | None:
    raw = r.get(draft_key(name.lower()))
    if raw is None:
        return None
    data = json.loads(raw)
    return Draft(**{k: data[k] for k in Draft.__dataclass_fields__})


def drop_draft(r: redis.Redis, name: str) -> None:
    r.delete(draft_key(name.lower()))


CLIP_FUNCTION = "narrate.jobs.task.clip.clip_job"


class BadClipSpec(ValueError):
    """A clip spec no submit makes."""


@dataclass(frozen=True)
class ClipSpec:
    text: str  # the line as written
    voice: str  # jobs.book.voice.VoiceRef.spec_voice
    seeds: list[int]  # one clip per seed
    language: str = "en"  # the line's language (a code: en, de...)
    instruct: str | None = None
    model: str | None = None
    quant: str | None = None
    max_frames: int = field(default_factory=lambda: default("max_frames"))
    keep_s: int = 7 * DAY_S  # how long the clips are kept

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> ClipSpec:
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise BadClipSpec(f"unknown clip spec fields: {sorted(unknown)}")
        try:
            spec = cls(**data)
        except TypeError as e:
            raise BadClipSpec(f"clip spec: {e}") from None
        spec.check()
        return spec

    @property
    def ref(self) -> VoiceRef:
        return VoiceRef.from_spec(self.voice, self.instruct)

    def check(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip() or len(self.text) > MAX_LINE_CHARS:
            raise BadClipSpec(f"clip spec: text of 1-{MAX_LINE_CHARS} characters expected")
        if not isinstance(self.seeds, list) or not 1 <= len(self.seeds) <= MAX_CANDIDATES:
            raise BadClipSpec(f"clip spec: 1-{MAX_CANDIDATES} seeds expected")
        if not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**31 for s in self.seeds):
            raise BadClipSpec("clip spec: seeds must be whole numbers from 0 to 2^31 - 1")
        if not isinstance(self.max_frames, int) or not 1 <= self.max_frames <= MAX_FRAMES_CAP:
            raise BadClipSpec(f"clip spec: max_frames from 1 to {MAX_FRAMES_CAP} expected")
        if not isinstance(self.keep_s, int) or self.keep_s < 60:
            raise BadClipSpec("clip spec: keep_s of at least 60 expected")
        try:
            self.ref  # noqa: B018 - parses the voice
        except BadVoiceRef as e:
            raise BadClipSpec(f"clip spec: {e}") from None
