"""`narrate voice ...`: the voice library (add, list, show, rename, remove), previews, designed
voices (design, keep), for the CLI and any other caller. Previews and designs are clip jobs
(jobs.task.clip) on the high-priority queue: they run on the workers, under the host lock, between
the batches of the books; their clips come back through Redis."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import redis
from narrate.jobs.api.listing import list_jobs
from narrate.jobs.api.model_choice import check_model
from narrate.jobs.audio.samples import normalize_voice, read_voice
from narrate.jobs.documents.languages import check_language
from narrate.jobs.documents.readers import ReadOptions, read_any
from narrate.jobs.errors import BadInput, NarrateError
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.queue import riding
from narrate.jobs.queue.queues import queue_for
from narrate.jobs.server import store
from narrate.jobs.server.durability import durable_writes
from narrate.jobs.server.records import find, queue
from narrate.jobs.settings import DAY_S, Settings, check_quant
from narrate.jobs.voices import clips, voice_library
from narrate.jobs.voices.choice import VoiceChoice
from narrate.jobs.voices.clips import CLIP_FUNCTION, CLIP_PREFIX, ClipSpec
from narrate.jobs.voices.model_offer import DEFAULT_VOICE_DESIGN, QWEN_PRESETS, facts
from narrate.jobs.voices.names import check_name
from rq.job import Job, JobStatus

PENDING = ("queued", "scheduled", "deferred")  # jobs that have not taken their voice yet


def add(
    settings: Settings, r: redis.Redis, name: str, sample: Path, description: str | None = None, text: str | None = None
) -> voice_library.VoiceRecord:
    """Save a voice sample under `name` (checked and normalized first: nothing is stored otherwise)."""
    name = check_name(name)
    record_text = voice_library.check_text(text, "transcript", voice_library.MAX_TRANSCRIPT_CHARS)
    said = voice_library.check_text(description, "description", voice_library.MAX_DESCRIPTION_CHARS)
    v = read_voice(Path(sample), ffmpeg_exe(settings.ffmpeg))
    record = voice_library.VoiceRecord(
        name, "clone", v.sha256, round(v.seconds, 3), said, record_text, voice_library.now_iso()
    )
    with durable_writes(r):
        return voice_library.add(r, record, v)


def list_voices(r: redis.Redis, model: str | None = None) -> list[dict]:
    """Saved voices, then (with `model`) the model's preset speakers: one JSON-able dict each."""
    rows = [_row(v) for v in voice_library.all_voices(r)]
    if model is not None:
        rows += preset_rows(model)
    return rows


def preset_rows(model: str) -> list[dict]:
    """The preset speakers of `model`, as this host can tell (its config.json, else Qwen3-TTS's
    model card for a CustomVoice id); none for a Base or VoiceDesign model."""
    model = check_model(model) or model
    known = facts(model)
    if known is None or known.kind != "custom_voice":
        return []
    names, source = (known.speakers, "config.json") if known.speakers is not None else (QWEN_PRESETS, "model card")
    return [
        {
            "name": n,
            "kind": "preset",
            "description": f"a preset speaker of {model} ({source})",
            "created_at": None,
            "speaker": n,
            "sha256": None,
            "model": model,
        }
        for n in names
    ]


def _row(v: voice_library.VoiceRecord) -> dict:
    row = asdict(v)
    row["kind"] = v.kind
    row["speaker"] = None
    return row


def show(r: redis.Redis, settings: Settings, name: str) -> dict:
    """A saved voice's record and who still names it, or a design waiting to be kept."""
    record = voice_library.find(r, name)
    if record is None:
        draft = clips.get_draft(r, name)
        if draft is None:
            voice_library.get(r, name)  # raises VoiceNotFound, listing the saved voices
        assert draft is not None
        return {
            "name": draft.name,
            "kind": "design (not kept yet)",
            "description": draft.description,
            "text": draft.text,
            "model": draft.model,
            "job": draft.job_id,
            "candidates": len(draft.seeds),
            "created_at": draft.created_at,
        }
    return {**_row(record), "used_by": users(r, settings, record.name)}


def rename(r: redis.Redis, old: str, new: str) -> voice_library.VoiceRecord:
    with durable_writes(r):
        return voice_library.rename(r, old, new)


def users(r: redis.Redis, settings: Settings, name: str) -> list[str]:
    """The queued, scheduled or waiting jobs submitted with this saved voice (by its name, or its
    sample under any name or from a file), and the schedules added with its name."""
    name = name.lower()
    record = voice_library.find(r, name)
    found = []
    for state in PENDING:
        for row in list_jobs(r, settings.queue, settings.output_dir, state):
            if row.get("voice_name") == name or (record is not None and row.get("voice_sample") == record.sha256):
                found.append(f"job {row['id']} ({row['status']}: {row['document']})")
    return found + voice_library.pins(r, name)


def users_shown(users: list[str], most: int = 5) -> str:
    """What names a voice (`users`), the first `most` of them."""
    return "; ".join(users[:most]) + (f"; and {len(users) - most} more" if len(users) > most else "")


def remove(
    r: redis.Redis, settings: Settings, name: str, force: bool = False
) -> tuple[voice_library.VoiceRecord, list[str]]:
    """Delete a saved voice; refused (VoiceInUse) while a queued, scheduled or recurring job names it,
    unless `force` (they keep the sample they were submitted with). Returns (record, those users)."""
    record = voice_library.get(r, name)
    using = users(r, settings, record.name)
    if using and not force:
        raise voice_library.VoiceInUse(
            f"voice {record.name!r} is still named by {users_shown(using)}; they keep their copy of the sample, so "
            f"`narrate voice remove {record.name} --force` removes it anyway",
            record.name,
            using,
        )
    with durable_writes(r):
        return voice_library.remove(r, record.name), using


def _enqueue_clip(settings: Settings, r: redis.Redis, spec: ClipSpec, label: str) -> Job:
    """The clip job (high priority), or the identical one: queued or running -> that one; finished
    with its clips still stored -> that one; otherwise made anew."""
    blob = json.dumps(spec.to_json(), sort_keys=True).encode()
    job_id = CLIP_PREFIX + hashlib.sha256(blob).hexdigest()[:32]
    earlier = find(r, job_id)
    if earlier is not None:
        state = earlier.get_status(refresh=False)
        if state in (JobStatus.QUEUED, JobStatus.STARTED, JobStatus.SCHEDULED, JobStatus.DEFERRED):
            return earlier
        if state == JobStatus.FINISHED and r.exists(clips.clip_key(job_id, len(spec.seeds))):
            return earlier
        earlier.delete()
    q = queue(r, queue_for(settings.queue, "high"))
    keep = settings.keep_days * DAY_S
    job = q.create_job(
        CLIP_FUNCTION,
        args=(spec.to_json(),),
        job_id=job_id,
        timeout=600 + spec.max_frames * len(spec.seeds),
        result_ttl=keep,
        failure_ttl=keep,
        description=f"narrate {label}",
        meta={
            "progress": {"done": 0, "total": len(spec.seeds), "audio_seconds": 0.0},
            "document": label,
            "max_retries": 0,
        },
    )
    with durable_writes(r):
        job = q.enqueue_job(job)
        riding.signal_waiting(r, q.name, job.id)  # a worker busy with a book takes it along at once
    return job


def first_sentence(document: Path) -> str:
    doc = read_any(Path(document), ReadOptions())
    if not doc.sentences:
        raise BadInput(f"document {document} has no sentence to speak")
    return str(doc.sentences[0])[: clips.MAX_LINE_CHARS]


def preview(
    settings: Settings,
    r: redis.Redis,
    voice: VoiceChoice,
    text: str | None = None,
    language: str = "en",
    model: str | None = None,
    quant: str | None = None,
) -> Job:
    """Queue a preview of `voice` speaking one line (default: a pangram)."""
    check_quant(quant)
    line = clips.check_line(text)
    if voice.sample is not None:
        store.put_voice(r, voice.sample.sha256, voice.sample.wav, settings.keep_days * DAY_S)
    spec = ClipSpec(
        line,
        voice.ref.spec_voice,
        [settings.seed],
        _language(language),
        voice.ref.instruct,
        check_model(model),
        quant,
        settings.max_frames,
        settings.keep_days * DAY_S,
    )
    return _enqueue_clip(settings, r, spec, f"preview of {voice.describe()}")


def _language(language: str | None) -> str:
    code = check_language(language or "en")
    return "en" if code in (None, "auto") else code


def design(
    settings: Settings,
    r: redis.Redis,
    name: str,
    description: str,
    text: str | None = None,
    candidates: int = 3,
    model: str | None = None,
    quant: str | None = None,
    language: str = "en",
) -> tuple[clips.Draft, Job]:
    """Queue one job that makes `candidates` clips of a voice described in words (a VoiceDesign
    model), kept as a draft under `name` until `keep` saves one of them."""
    name = check_name(name)
    if voice_library.find(r, name) is not None:
        raise voice_library.VoiceExists(
            f"a voice named {name!r} exists; design under another name, or remove it first", name
        )
    said = voice_library.check_text(description, "description", voice_library.MAX_DESCRIPTION_CHARS)
    if not said:
        raise BadInput('the description is empty; describe the voice, e.g. "Female, 60s, low raspy alto, unhurried"')
    if not 1 <= candidates <= clips.MAX_CANDIDATES:
        raise BadInput(f"--candidates {candidates}: make 1 to {clips.MAX_CANDIDATES} candidates")
    check_quant(quant)
    model = check_model(model) or DEFAULT_VOICE_DESIGN
    known = facts(model)
    if known is not None and known.kind != "voice_design":
        raise BadInput(
            f"model {model} is a {known.kind_name} model: a voice described in words needs a VoiceDesign model "
            f"(--model {DEFAULT_VOICE_DESIGN})"
        )
    line = clips.check_line(text)
    seeds = [(settings.seed * 1_000_003 + i) % 2**31 for i in range(candidates)]
    spec = ClipSpec(
        line, "design", seeds, _language(language), said, model, quant, settings.max_frames, settings.keep_days * DAY_S
    )
    job = _enqueue_clip(settings, r, spec, f"design of voice {name}")
    draft = clips.Draft(name, said, line, model, job.id, seeds, voice_library.now_iso())
    clips.put_draft(r, draft, settings.keep_days * DAY_S)
    return draft, job


def clip_numbers(r: redis.Redis, job_id: str) -> list[int]:
    """The clips a finished clip job made (1, 2, ...); raises NarrateError if it has not finished."""
    job = find(r, job_id)
    state = job.get_status(refresh=False) if job is not None else None
    if job is None or state != JobStatus.FINISHED:
        error = (job.meta or {}).get("error") if job is not None else None
        said = f"{state.value if state else 'gone'}" + (f": {error}" if error else "")
        raise NarrateError(f"clip job {job_id} did not finish ({said})")
    result = job.return_value(refresh=True) or {}
    return [int(c["number"]) for c in result.get("clips", [])]


def write_clip(r: redis.Redis, job_id: str, number: int, path: Path) -> Path:
    """Clip `number` of a finished clip job, written to `path` whole (a temporary file renamed)."""
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part")
    try:
        tmp.write_bytes(clips.get_clip(r, job_id, number))
        tmp.replace(path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise NarrateError(f"cannot write {path}: {e.strerror or e}") from None
    return path


def keep(settings: Settings, r: redis.Redis, name: str, number: int) -> voice_library.VoiceRecord:
    """Save candidate `number` of the design `name` as a voice of the library (a sample that Base
    models clone: one stable identity for a whole book)."""
    name = check_name(name)
    draft = clips.get_draft(r, name)
    if draft is None:
        raise BadInput(f"no design named {name!r} waits to be kept (narrate voice design {name} DESCRIPTION)")
    job = find(r, draft.job_id)
    state = job.get_status(refresh=False) if job is not None else None
    if state != JobStatus.FINISHED:
        said = "is gone" if state is None else f"is {state.value}"
        raise BadInput(f"the design job {draft.job_id} {said}; keep a candidate once it has finished (narrate status)")
    if not 1 <= number <= len(draft.seeds):
        raise BadInput(f"design {name!r} has candidates 1 to {len(draft.seeds)}, not {number}")
    wav = clips.get_clip(r, draft.job_id, number)
    v = normalize_voice(wav, origin=f"candidate {number} of design {name!r}", ffmpeg=ffmpeg_exe(settings.ffmpeg))
    record = voice_library.VoiceRecord(
        name,
        "designed",
        v.sha256,
        round(v.seconds, 3),
        draft.description,
        draft.text,
        voice_library.now_iso(),
        draft.model,
        draft.seeds[number - 1],
    )
    with durable_writes(r):
        voice_library.add(r, record, v)
    clips.drop_draft(r, name)
    return record
