"""Recurring schedules: a watched folder narrated at the times a cron expression names.

Everything is JSON in Redis, so every host sees the same schedules (no pickle anywhere):

- ``narrate:schedules``: hash, name -> the definition (``Schedule``);
- ``narrate:schedule-voice:<sha256>``: the schedule's voice, normalized, content-addressed and kept as
  long as a schedule uses it (the file it came from may move or go);
- ``narrate:schedule:<name>:state``: what the ticks did (``last_tick``, ``runs``, ``last_run``, ``problem``);
- ``...:docs``: hash, document file name -> what was narrated (its stat signature, sha256, job);
- ``...:skipped``: hash, file name -> why it is skipped (with its signature: retried once it changes);
- ``...:seen``: hash, file name -> a document still being written (signature, when first seen);
- ``...:tick``: the lease of the tick in progress (jobs/schedules/tick.py).

The logic of a tick is in jobs/schedules/tick.py, the loop that runs ticks in jobs/schedules/loop.py.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

import redis
from narrate.jobs.api.casting import CastChoice
from narrate.jobs.api.fields import KNOBS
from narrate.jobs.api.options import DEFAULTS, Options
from narrate.jobs.audio.samples import Voice, voice_samples
from narrate.jobs.book.voice import VoiceRef
from narrate.jobs.cast.reading import CastReading
from narrate.jobs.documents.readers import ReadOptions
from narrate.jobs.documents.voicing import NARRATOR
from narrate.jobs.errors import BadInput, NarrateError, printable
from narrate.jobs.outputs.outputs import check_format, relative_output
from narrate.jobs.schedules import cron
from narrate.jobs.schedules.lease import holder
from narrate.jobs.server.store import PREFIX
from narrate.jobs.settings import SAMPLE_RATE, Settings
from narrate.jobs.voices import voice_library
from narrate.jobs.voices.choice import VoiceChoice

SCHEDULES = f"{PREFIX}schedules"
log = logging.getLogger("narrate.scheduler")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
PROBE = "narrate-schedule-probe"  # a file name used only to check the output folder at add time
PARTS = ("state", "docs", "skipped", "seen", "tick", "problem")  # the keys of one schedule


class ScheduleNotFound(NarrateError):
    """No schedule by that name."""


def key(name: str, part: str) -> str:
    return f"{PREFIX}schedule:{name}:{part}"


def voice_key(sha: str) -> str:
    return f"{PREFIX}schedule-voice:{sha}"


@dataclass(frozen=True)
class Schedule:
    name: str
    cron: str
    tz: str  # IANA zone the expression is read in
    watch: str  # absolute path of the watched folder (symlinks resolved when added)
    output_dir: str  # relative to the output root ("" is the root itself)
    format: str  # output extension, e.g. ".mp3"
    voice: str  # sha256 of the stored sample, or preset:NAME (jobs.book.voice.VoiceRef.spec_voice)
    queue: str
    # The request's options (api.options.Options.to_json), checked; the job's numbers (seed, frame cap, pauses) in
    # them as given or, where not, as the adding host's settings had them: every tick submits the same request.
    options: dict = field(default_factory=dict)
    created: float = 0.0
    instruct: str | None = None  # a preset speaker's instruction
    voice_name: str | None = None  # the saved voice or preset it was added with (pinned: jobs.voices.voice_library)
    # A cast: {"reading": CastReading JSON, "voices": {label: {"voice", "instruct", "name"}}}; the
    # samples kept like the narrator's (schedule-voice:<sha256>).
    cast: dict | None = None

    @property
    def voice_ref(self) -> VoiceRef:
        return VoiceRef.from_spec(self.voice, self.instruct)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str | bytes) -> Schedule:
        data = json.loads(raw)
        if "options" not in data:  # a schedule added before its options were one object
            data["options"] = Options(
                model=data.get("model"),
                quant=data.get("quant"),
                lexicon=data.get("lexicon") or [],
                reading=ReadOptions(language=data.get("language", "auto")),
            ).to_json()
        for k, v in (data.pop("job_settings", None) or {}).items():  # kept beside the options before
            if k in KNOBS and data["options"].get(k) is None:
                data["options"][k] = v
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def opts(self) -> Options:
        """The options every document of the folder is submitted with."""
        return Options.from_json(self.options)

    def output_for(self, root: Path, stem: str) -> Path:
        return root.expanduser().resolve().joinpath(*PurePosixPath(self.output_dir).parts) / f"{stem}{self.format}"


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise BadInput(
            f"schedule name {name!r} is not valid: use 1-64 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit"
        )
    return name


def check_watch(path: Path) -> Path:
    """The folder's real path, if it is a folder this process can list."""
    try:
        real = Path(os.path.realpath(Path(path).expanduser()))
        with os.scandir(real) as it:
            next(it, None)
    except FileNotFoundError:
        raise BadInput(f"watch folder {path} does not exist; create it or give another (--watch)") from None
    except NotADirectoryError:
        raise BadInput(f"watch folder {path} is not a folder") from None
    except PermissionError:
        raise BadInput(f"watch folder {path} cannot be read (permission denied)") from None
    except OSError as e:
        raise BadInput(f"watch folder {path} cannot be read: {e.strerror or e}") from None
    return real


def check_format_name(fmt: str) -> str:
    ext = "." + fmt.lstrip(".").lower()
    return check_format(f"x{ext}")


def _output_dir(settings: Settings, output_dir: Path | None, ext: str) -> str:
    """The output folder relative to the output root, checked like an output file in it (the same
    rule as `submit -o`, see jobs/outputs/outputs.py)."""
    root = settings.output_dir.expanduser().resolve()
    folder = Path(output_dir).expanduser() if output_dir else root
    try:
        rel = relative_output(root, folder / f"{PROBE}{ext}")
    except BadInput as e:  # said of the folder, not of the file name used to check it
        raise BadInput(str(e).replace(f"{os.sep}{PROBE}{ext}", "").replace("output ", "output folder ", 1)) from None
    parent = PurePosixPath(rel).parent
    return "" if str(parent) == "." else parent.as_posix()


def make(
    settings: Settings,
    name: str,
    cron_expr: str,
    watch: Path,
    voice: VoiceChoice,
    output_dir: Path | None = None,
    fmt: str = "mp3",
    tz: str | None = None,
    options: Options = DEFAULTS,
    cast: CastChoice | None = None,
) -> Schedule:
    """Check everything a schedule needs (raises BadInput); touches no server. `voice` was chosen
    (jobs.voices.choice: a sample is kept with the schedule), `options` checked by ``Options.make``
    (the lexicon and cover files read then: ticks may run on another host, which need not have them;
    a model path made absolute)."""
    check_name(name)
    expr = cron.check_cron(cron_expr)
    tz = tz or cron.local_zone()
    cron.zone(tz)
    now = time.time()
    if cron.next_tick(expr, tz, now) is None:
        raise BadInput(f"cron expression {expr!r} never names a time (a day that does not exist?)")
    ext = check_format_name(fmt)
    real = check_watch(watch)
    rel = _output_dir(settings, output_dir, ext)
    return Schedule(
        name=name,
        cron=expr,
        tz=tz,
        watch=str(real),
        output_dir=rel,
        format=ext,
        voice=voice.ref.spec_voice,
        queue=settings.queue,
        options=options.for_output(f"x{ext}").with_knobs_of(settings).to_json(),
        created=now,
        instruct=voice.ref.instruct,
        voice_name=voice.name,
        cast=_cast_json(cast),
    )


def _cast_json(cast: CastChoice | None) -> dict | None:
    if cast is None:
        return None
    voices = {
        label: {"voice": c.ref.spec_voice, "instruct": c.ref.instruct, "name": c.name}
        for label, c in cast.voices.items()
    }
    return {"reading": cast.reading.to_json(), "voices": voices}


def _samples(sched: Schedule) -> set[str]:
    """The sha256s of the samples a schedule keeps: its narrator's and its cast's."""
    refs = [sched.voice_ref, *(VoiceRef.from_spec(v["voice"], v.get("instruct")) for v in _cast_voices(sched))]
    return {ref.sample for ref in refs if ref.sample}


def _cast_voices(sched: Schedule) -> list[dict]:
    return list(((sched.cast or {}).get("voices") or {}).values())


def _names(sched: Schedule) -> set[str]:
    return {n for n in [sched.voice_name, *(v.get("name") for v in _cast_voices(sched))] if n}


def pin_name(sched: Schedule) -> str:
    return f"schedule {sched.name}"


def add(r: redis.Redis, sched: Schedule, voice: VoiceChoice, cast: CastChoice | None = None) -> None:
    """Store a new schedule (with its own copy of a sample); its first tick is the first time after
    now that its expression names."""
    state = {"last_tick": sched.created, "runs": 0}
    with r.pipeline() as p:
        while True:
            try:
                p.watch(SCHEDULES)
                if r.hexists(SCHEDULES, sched.name):
                    raise BadInput(
                        f"schedule {sched.name!r} exists; remove it first (narrate schedule remove {sched.name})"
                    )
                p.multi()
                for chosen in (voice, *(cast.voices.values() if cast else ())):
                    if chosen.sample is not None:
                        p.set(voice_key(chosen.sample.sha256), chosen.sample.wav)
                for name in _names(sched):
                    p.sadd(voice_library.pins_key(name), pin_name(sched))
                p.hset(SCHEDULES, sched.name, sched.to_json())
                for part in PARTS:
                    p.delete(key(sched.name, part))
                p.set(key(sched.name, "state"), json.dumps(state))
                p.execute()
                return
            except redis.WatchError:
                continue


def get(r: redis.Redis, name: str) -> Schedule:
    raw = r.hget(SCHEDULES, name)
    if raw is None:
        raise ScheduleNotFound(f"no schedule named {name!r}; see narrate schedule list")
    return Schedule.from_json(raw)


def all_schedules(r: redis.Redis) -> list[Schedule]:
    """Every schedule, by name (a definition that cannot be read is logged and left out)."""
    found = []
    for name, raw in r.hgetall(SCHEDULES).items():
        try:
            found.append(Schedule.from_json(raw))
        except (ValueError, TypeError) as e:
            log.warning("schedule %s cannot be read (%s); remove it and add it again", printable(os.fsdecode(name)), e)
    return sorted(found, key=lambda s: s.name)


def remove(r: redis.Redis, name: str) -> Schedule:
    """Delete a schedule and what it kept (its voice too, unless another schedule uses it). A tick in
    progress loses its lease and stops; the jobs it submitted stay."""
    with r.pipeline() as p:
        while True:
            try:
                p.watch(SCHEDULES)
                sched = get(r, name)
                kept = set().union(*(_samples(s) for s in all_schedules(r) if s.name != name))
                p.multi()
                p.hdel(SCHEDULES, name)
                p.delete(*(key(name, part) for part in PARTS))
                for voice_name in _names(sched):
                    p.srem(voice_library.pins_key(voice_name), pin_name(sched))
                for sha in _samples(sched) - kept:
                    p.delete(voice_key(sha))
                p.execute()
                return sched
            except redis.WatchError:
                continue


def load_voice(r: redis.Redis, sched: Schedule) -> VoiceChoice:
    """The voice every tick submits with: the schedule's own copy of its sample, or its preset."""
    ref = sched.voice_ref
    if ref.kind != "clone":
        return VoiceChoice(ref, None, sched.voice_name)
    return VoiceChoice(ref, _kept_sample(r, sched, sched.voice, "the voice"), sched.voice_name)


def load_cast(r: redis.Redis, sched: Schedule) -> CastChoice | None:
    """The schedule's cast (its samples from the schedule's own copies), or None."""
    if not sched.cast:
        return None
    voices = {}
    for label, v in (sched.cast.get("voices") or {}).items():
        ref = VoiceRef.from_spec(v["voice"], v.get("instruct"))
        sample = _kept_sample(r, sched, ref.sample, f"the cast's voice {label!r}") if ref.sample else None
        voices[label] = VoiceChoice(ref, sample, v.get("name"))
    reading = CastReading.from_json(sched.cast["reading"])
    return CastChoice(reading, voices, reading.cast.seed_of(NARRATOR))


def _kept_sample(r: redis.Redis, sched: Schedule, sha: str, what: str) -> Voice:
    wav = r.get(voice_key(sha))
    assert wav is None or isinstance(wav, bytes)  # narrate's clients return bytes (decode_responses off)
    if wav is None or hashlib.sha256(wav).hexdigest() != sha:
        raise NarrateError(
            f"{what} of schedule {sched.name!r} is {'gone from' if wav is None else 'damaged on'} the server; "
            "remove the schedule and add it again"
        )
    return Voice(wav=wav, sha256=sha, seconds=len(voice_samples(wav)) / SAMPLE_RATE)


def state(r: redis.Redis, name: str) -> dict:
    raw = r.get(key(name, "state"))
    return json.loads(raw) if raw else {"last_tick": 0.0, "runs": 0}


def describe(r: redis.Redis, sched: Schedule, root: Path, now: float | None = None) -> dict:
    """What `narrate schedule list` shows (JSON-able): the definition, next and last run, what the last
    run submitted and left waiting, the documents skipped and why, a tick running now, a problem."""
    now = time.time() if now is None else now
    st = state(r, sched.name)
    skipped = [
        {"document": printable(os.fsdecode(f)), "reason": rec.get("reason", ""), "since": rec.get("since")}
        for f, rec in ((f, json.loads(v)) for f, v in sorted(r.hgetall(key(sched.name, "skipped")).items()))
    ]
    problem = r.get(key(sched.name, "problem"))
    nxt = cron.next_tick(sched.cron, sched.tz, max(now, st.get("last_tick", 0.0)))
    opts = sched.opts
    return {
        "name": sched.name,
        "cron": sched.cron,
        "tz": sched.tz,
        "watch": sched.watch,
        "output_dir": str(sched.output_for(root, "x").parent),
        "format": sched.format,
        "voice": sched.voice,
        "voice_name": sched.voice_name,
        "instruct": sched.instruct,
        "model": opts.model,
        "quant": opts.quant,
        "language": opts.language,
        "lexicon_entries": len(opts.lexicon),
        "priority": opts.priority,
        "options": _shown_options(opts),
        "queue": sched.queue,
        "next_run": nxt,
        "due_now": cron.due_tick(sched.cron, sched.tz, now, st.get("last_tick", 0.0)) is not None,
        "last_tick": st.get("last_tick"),
        "runs": st.get("runs", 0),
        "last_run": st.get("last_run"),
        "narrated": r.hlen(key(sched.name, "docs")),
        "skipped": skipped,
        "problem": json.loads(problem) if problem else None,
        "running": holder(r, key(sched.name, "tick")),
        "clock_went_back": st.get("clock_went_back"),
    }


def _shown_options(opts: Options) -> dict:
    """The options that differ from the defaults, JSON-able (the cover as its size). Every option a schedule can
    hold is shown, those the defaults leave out of the JSON (a feed, a library, the proof pass, a seed...) too."""
    shown, base = {}, DEFAULTS.to_json()
    for k, v in opts.to_json().items():
        if k == "book":
            book = {b: x for b, x in v.items() if x != base["book"].get(b)}
            if book.get("cover"):
                book["cover"] = f"{len(opts.book.cover or b'')} bytes"
            if book:
                shown["book"] = book
        elif k not in ("model", "quant", "lexicon", "priority") and v != base.get(k):
            shown[k] = v
    return shown


def summary(r: redis.Redis) -> list[dict]:
    """One flat row per schedule, for `narrate info`: name, cron, folder, next and last run."""
    rows = []
    now = time.time()
    for sched in all_schedules(r):
        st = state(r, sched.name)
        last = st.get("last_run") or {}
        nxt = cron.next_tick(sched.cron, sched.tz, max(now, st.get("last_tick", 0.0)))
        rows.append(
            {
                "name": sched.name,
                "cron": f"{sched.cron} ({sched.tz})",
                "watch": sched.watch,
                "next_run": cron.show(nxt, sched.tz),
                "last_run": cron.show(last["started"], sched.tz) if last else "never",
                "submitted": len(last.get("submitted", [])),
                "skipped": r.hlen(key(sched.name, "skipped")),
            }
        )
    return rows
