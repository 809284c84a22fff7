"""The voice library, in Redis so that every host sees the same voices:

- ``narrate:voices``: hash, name -> the voice's record (``VoiceRecord``, JSON);
- ``narrate:library-voice:<sha256>``: a saved voice's normalized sample, kept (no expiry) while a
  record names it; a job copies it into the job store (``narrate:voice:<sha256>``, kept for the
  job's lifetime) when it is submitted, so removing or renaming a voice never changes a job;
- ``narrate:voice-pins:<name>``: set, the schedules that were added with this voice's name (their
  own copy of the sample is kept with them: jobs.schedules.definitions).

The speaker embeddings stay keyed by sample content and model (narrate:emb:...), whatever the name."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import redis
from narrate.jobs.audio.samples import Voice, voice_samples
from narrate.jobs.errors import BadInput, Conflict, NarrateError, NotFound
from narrate.jobs.server.store import PREFIX
from narrate.jobs.settings import SAMPLE_RATE
from narrate.jobs.voices.names import check_name

VOICES = f"{PREFIX}voices"
MAX_DESCRIPTION_CHARS = 1000
MAX_TRANSCRIPT_CHARS = 2000


class VoiceNotFound(NotFound):
    """No saved voice by that name."""

    code = "voice_not_found"


class VoiceExists(Conflict):
    """A voice of that name is saved already (facts: `name`)."""

    code = "voice_exists"

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message, param="name", facts={"name": name})


class VoiceInUse(Conflict):
    """Queued, scheduled or recurring jobs name the voice (facts: `name`, `users`: what names it)."""

    code = "voice_in_use"

    def __init__(self, message: str, name: str, users: list[str]) -> None:
        super().__init__(message, param="name", facts={"name": name, "users": list(users)})


def sample_key(sha: str) -> str:
    return f"{PREFIX}library-voice:{sha}"


def pins_key(name: str) -> str:
    """What was made with voice `name` (a schedule, ...): names are compared without case."""
    return f"{PREFIX}voice-pins:{name.lower()}"


@dataclass(frozen=True)
class VoiceRecord:
    name: str
    kind: str  # clone (added from a sample) | designed (a kept VoiceDesign candidate)
    sha256: str  # of the normalized sample
    seconds: float
    description: str = ""
    text: str = ""  # what the sample says, if given
    created_at: str = ""  # ISO 8601, UTC
    model: str | None = None  # designed: the VoiceDesign model it came from
    seed: int | None = None  # designed: the candidate's seed

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: str | bytes) -> VoiceRecord:
        data = json.loads(raw)
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def check_text(value: str | None, what: str, limit: int) -> str:
    """A description or transcript: printable, at most `limit` characters."""
    text = (value or "").strip()
    if len(text) > limit:
        raise BadInput(f"the {what} is {len(text)} characters long; keep it to {limit}")
    if any(ord(c) < 32 and c not in "\n\t" for c in text):
        raise BadInput(f"the {what} holds a control character; give plain text")
    return text


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def add(r: redis.Redis, record: VoiceRecord, sample: Voice) -> VoiceRecord:
    """Save a new voice (its name checked, the sample already normalized); refuses a name in use."""
    name = check_name(record.name)
    with r.pipeline() as p:
        while True:
            try:
                p.watch(VOICES)
                if r.hexists(VOICES, name):
                    raise VoiceExists(
                        f"a voice named {name!r} exists; remove it first (narrate voice remove {name}) "
                        "or choose another name",
                        name,
                    )
                p.multi()
                p.set(sample_key(sample.sha256), sample.wav)
                p.hset(VOICES, name, json.dumps(record.to_json()))
                p.execute()
                return record
            except redis.WatchError:
                continue


def get(r: redis.Redis, name: str) -> VoiceRecord:
    raw = r.hget(VOICES, name.lower())
    if raw is None:
        raise VoiceNotFound(f"no saved voice named {name.lower()!r}{_saved_hint(r)}")
    return VoiceRecord.from_json(raw)


def find(r: redis.Redis, name: str) -> VoiceRecord | None:
    raw = r.hget(VOICES, name.lower())
    return VoiceRecord.from_json(raw) if raw is not None else None


def all_voices(r: redis.Redis) -> list[VoiceRecord]:
    """Every saved voice, by name (a record that cannot be read is left out)."""
    found = []
    for raw in r.hvals(VOICES):
        try:
            found.append(VoiceRecord.from_json(raw))
        except (ValueError, TypeError):
            continue
    return sorted(found, key=lambda v: v.name)


def _saved_hint(r: redis.Redis) -> str:
    names = sorted(n.decode() if isinstance(n, bytes) else str(n) for n in r.hkeys(VOICES))
    if not names:
        return " (none are saved: narrate voice add NAME SAMPLE)"
    shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return f" (saved: {shown}; see narrate voice list)"


def sample(r: redis.Redis, record: VoiceRecord) -> Voice:
    """The saved voice's normalized sample (checked against its hash)."""
    wav = r.get(sample_key(record.sha256))
    assert wav is None or isinstance(wav, bytes)  # narrate's clients return bytes (decode_responses off)
    if wav is None or hashlib.sha256(wav).hexdigest() != record.sha256:
        raise NarrateError(
            f"the sample of voice {record.name!r} is {'gone from' if wav is None else 'damaged on'} the server; "
            f"remove the voice and add it again (narrate voice remove {record.name} --force)"
        )
    return Voice(wav=wav, sha256=record.sha256, seconds=len(voice_samples(wav)) / SAMPLE_RATE)


def rename(r: redis.Redis, old: str, new: str) -> VoiceRecord:
    """Give a saved voice another name (queued jobs keep the sample they were submitted with)."""
    new = check_name(new)
    with r.pipeline() as p:
        while True:
            try:
                p.watch(VOICES, pins_key(old.lower()))
                record = get(r, old)
                if new != record.name and r.hexists(VOICES, new):
                    said = f"a voice named {new!r} exists; choose another name or remove that one first"
                    raise VoiceExists(said, new)
                pins = r.smembers(pins_key(record.name))
                renamed = VoiceRecord(**{**record.to_json(), "name": new})
                p.multi()
                p.hdel(VOICES, record.name)
                p.hset(VOICES, new, json.dumps(renamed.to_json()))
                if pins and new != record.name:
                    p.delete(pins_key(record.name))
                    p.sadd(pins_key(new), *pins)
                p.execute()
                return renamed
            except redis.WatchError:
                continue


def remove(r: redis.Redis, name: str) -> VoiceRecord:
    """Delete a saved voice, and its sample unless another saved voice has the same one. Jobs and
    schedules keep their own copies of the sample."""
    with r.pipeline() as p:
        while True:
            try:
                p.watch(VOICES)
                record = get(r, name)
                same = [v for v in all_voices(r) if v.name != record.name and v.sha256 == record.sha256]
                p.multi()
                p.hdel(VOICES, record.name)
                p.delete(pins_key(record.name))
                if not same:
                    p.delete(sample_key(record.sha256))
                p.execute()
                return record
            except redis.WatchError:
                continue


def pins(r: redis.Redis, name: str) -> list[str]:
    return sorted(p.decode() if isinstance(p, bytes) else str(p) for p in r.smembers(pins_key(name)))
