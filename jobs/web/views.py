"""A job as HTTP clients see it (the `narration` object): `narrate status` and `narrate list` with
OpenAI Batch's status words (queued | scheduled | in_progress | completed | failed | cancelled),
progress, the files it wrote (jobs/web/outputs.py) with their URLs, and the error."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import quote

import redis
from narrate.jobs.api import chapter_previews, listing
from narrate.jobs.api import proof_report as proofs
from narrate.jobs.api.jobview import JobView
from narrate.jobs.api.record import JobRecord, due_times, failure_line, isoformat, read_record, with_results
from narrate.jobs.errors import JobNotFound, NarrateError
from narrate.jobs.outputs import whereabouts
from narrate.jobs.queue.states import State
from narrate.jobs.settings import Settings
from narrate.jobs.voices.clips import CLIP_PREFIX
from narrate.jobs.web import outputs
from narrate.jobs.web.outputs import OutputFile
from narrate.jobs.xmltext import without_bidi
from rq.job import Job
from rq.serializers import JSONSerializer

# A voice name as the pages' fields check it (jobs/voices/names.py, any case). Chromium compiles an
# input's `pattern` with the `v` flag, where a `-` in a class must be escaped.
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_\-]{0,63}"
NAME_RULE = "1-64 letters, digits, - or _, starting with a letter or digit"


_JOB_ID = re.compile(r"narrate-[A-Za-z0-9_-]{1,191}")  # what rq takes as an id (it raises on anything else)


def check_id(job_id: str) -> str:
    if job_id.startswith(CLIP_PREFIX) or not _JOB_ID.fullmatch(job_id):
        raise JobNotFound(f"no narration {job_id[:80]!r} (wrong id, or it expired); GET /v1/narrations lists them")
    return job_id


def _progress(rec: JobRecord, chapters: list[dict[str, Any]], state: str) -> dict[str, Any]:
    """The progress figures; an ETA only while it runs (a finished job's last one said 0)."""
    p = rec.progress
    return {
        "sentences_done": rec.done,
        "sentences_total": rec.total,
        "audio_s": float(p.get("audio_seconds") or 0.0),
        "realtime_factor": p.get("realtime_factor"),
        "eta_s": p.get("eta_seconds") if state == "in_progress" else None,
        "chapters": chapters,
    }


def narration(r: redis.Redis, settings: Settings, job_id: str) -> dict[str, Any]:
    """One job, as `GET /v1/narrations/{id}` shows it."""
    return narration_and_files(r, settings, job_id)[0]


def _read(r: redis.Redis, job_id: str) -> JobRecord:
    """A narration's record with its result and due time (JobNotFound: none by that id)."""
    return due_times(r, with_results(r, [read_record(r, check_id(job_id))]))[0]


def narration_and_files(r: redis.Redis, settings: Settings, job_id: str) -> tuple[dict[str, Any], list[OutputFile]]:
    """`narration` and the files it lists (their paths on this host), read once."""
    rec = _read(r, job_id)
    found = _files(r, settings, rec)
    error = failure_line(r, rec) if rec.state == State.FAILED else None
    chapters = _chapters_so_far(r, rec)
    missing = _missing(r, settings, rec.id) if rec.state == State.FINISHED and not found else None
    return _view(rec, found, chapters, error=error, missing=missing), found


def finished_narrations(
    r: redis.Redis, settings: Settings, job_ids: list[str]
) -> list[tuple[dict[str, Any], list[OutputFile]]]:
    """`narration_and_files` of the finished ones among `job_ids`, in a bounded number of round trips
    whatever their number (jobs/api/jobview.py); `files_missing` is not explained here."""
    view = JobView(r, settings)
    done = view.finished(job_ids)
    files = view.files(list(done.values()))
    return [(_view(done[i], files[i]), files[i]) for i in job_ids if i in done]


def _chapters_so_far(r: redis.Redis, rec: JobRecord) -> list[dict[str, Any]]:
    """While it is read: each chapter's sentences done, and its audio where it is ready."""
    if rec.state != State.STARTED or (rec.result or {}).get("chapters"):
        return []
    made = chapter_previews.ready(r, rec.id)
    return [
        {
            "title": c["title"],
            "sentences_done": c["done"],
            "sentences_total": c["total"],
            "audio_url": chapter_url(rec.id, n) if n in made else None,
        }
        for n, c in enumerate(rec.progress.get("chapters") or [], start=1)
    ]


def _view(
    rec: JobRecord,
    found: list[OutputFile],
    chapters: list[dict[str, Any]] | None = None,
    error: str | None = None,
    missing: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The narration object of a job's record, the files it lists here and, where read: its chapters so
    far, its error line and why its files are missing."""
    state = rec.state.api
    result = rec.result or {}
    done = [{"title": c["title"], "start_s": c["start_seconds"]} for c in result.get("chapters", [])]
    files = [
        {"name": f.name, "url": file_url(rec.id, f.name), "bytes": f.bytes, "duration_s": outputs.duration_s(f.path)}
        for f in found
    ]
    return {
        "id": rec.id,
        "object": "narration",
        "status": state,
        "created_at": rec.created_at or isoformat(rec.enqueued_at),
        "started_at": isoformat(rec.started_at),
        "ended_at": isoformat(rec.ended_at),
        "scheduled_for": isoformat(rec.due_at),
        "priority": rec.priority,
        "document": rec.document,
        "voice": rec.meta.get("voice"),
        "host": ", ".join(rec.hosts) or rec.host if state == "in_progress" else None,
        "progress": _progress(rec, done or chapters or [], state),
        "duration_s": result.get("duration_seconds"),
        "voices": result.get("voices"),
        "outputs": files,
        "files_missing": missing,
        "error": (error or rec.error) if state == "failed" else None,
        "proof": _proof(result.get("proof") if state == "completed" else rec.meta.get("proof"), state == "completed"),
        "stopping": rec.stopping,
        "redo_of": rec.meta.get("redo_of"),
        "redo": _redo(rec.meta.get("redo")),
        "superseded_by": rec.meta.get("superseded_by"),
    }


def _redo(redo: Any) -> dict[str, list[int]] | None:
    """A redo's sentences rendered again and takes accepted (1 first), as its job's meta has them."""
    if not isinstance(redo, dict):
        return None
    return {k: [int(n) for n in redo.get(k) or [] if isinstance(n, int)] for k in ("sentences", "accepted")}


def _proof(proof: Any, complete: bool) -> dict[str, Any] | None:
    """With --proof: the recognizer and the counts (the sentences: GET .../proof, the Job page)."""
    if not isinstance(proof, dict):
        return None
    counts = proofs.counts_of(proof, complete)
    return {k: v for k, v in counts.items() if k != "fixed"}


def _missing(r: redis.Redis, settings: Settings, job_id: str) -> dict[str, Any] | None:
    """Why a completed narration lists no files here (jobs/outputs/whereabouts.py)."""
    why = whereabouts.explain(r, job_id, settings.output_dir)
    return why.to_json() if why else None


def files_of(r: redis.Redis, settings: Settings, job_id: str) -> list[OutputFile]:
    """The files a finished narration wrote that this host can serve (none before it finished)."""
    return _files(r, settings, with_results(r, [read_record(r, check_id(job_id))])[0])


def _files(r: redis.Redis, settings: Settings, rec: JobRecord) -> list[OutputFile]:
    rel = (rec.result or {}).get("output_relative")
    if rec.state != State.FINISHED or not rel:
        return []
    return outputs.recorded(r, settings.output_dir, rec.id, rel)


def file_url(job_id: str, name: str) -> str:
    return f"/v1/narrations/{job_id}/files/{quote(name)}"


def chapter_url(job_id: str, number: int) -> str:
    return f"/v1/narrations/{job_id}/chapters/{number}/audio"


def listed(r: redis.Redis, settings: Settings, state: str | None = None) -> list[dict[str, Any]]:
    """Every narration of the server's queues, newest first (`narrate list`), in `state` if given."""
    return listed_page(r, settings, (state,) if state else None)[0]


def listed_page(
    r: redis.Redis,
    settings: Settings,
    states: tuple[str, ...] | None = None,
    limit: int | None = None,
    after: str | None = None,
) -> tuple[list[dict[str, Any]], bool]:
    """`listed` a page at a time (jobs/api/listing.py list_page): the newest `limit` narrations after
    narration `after`, in one of `states` (API names) if given; and whether more follow."""
    wanted = tuple(State.from_api(s).value for s in states) if states else None
    records, more = listing.page_records(r, settings.queue, wanted, limit, after, clips=False)
    return [_view(rec, []) for rec in records], more


def offered_models(settings: Settings) -> list[str]:
    """The models the pages offer: the server's NARRATE_MODEL first, then those NARRATE_SERVE_MODELS
    allows (where that setting exists)."""
    allowed = getattr(settings, "serve_models", None) or ()
    return list(dict.fromkeys([settings.model, *allowed]))


def design_models(settings: Settings) -> list[str]:
    """The VoiceDesign models among those offered (a local checkpoint needs no network); none there:
    the published VoiceDesign model, from the hub."""
    from narrate.jobs.voices.model_offer import DEFAULT_VOICE_DESIGN, facts

    found = []
    for model in offered_models(settings):
        try:
            known = facts(model)
        except (NarrateError, OSError, ValueError):
            continue
        if known is not None and known.kind == "voice_design":
            found.append(model)
    return found or [DEFAULT_VOICE_DESIGN]


def queue_order(r: redis.Redis, settings: Settings, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Queue page's order: what runs first, then what waits in the order a worker takes it
    (priority, then place in its queue), then the scheduled ones (soonest due first), then the ended
    ones, newest first (`rows` come newest first, as `listed` makes them)."""
    from narrate.jobs.queue.queues import queue_names
    from narrate.jobs.server.records import queue

    with r.pipeline(transaction=False) as p:
        for name in queue_names(settings.queue):
            p.lrange(queue(r, name).key, 0, -1)
        waiting = [raw.decode() if isinstance(raw, bytes) else str(raw) for ids in p.execute() for raw in ids]
    return ordered(rows, waiting)


def ordered(rows: list[dict[str, Any]], waiting: list[str]) -> list[dict[str, Any]]:
    """`queue_order` of rows listed newest first, `waiting` the queued ids as a worker takes them."""
    place = {job_id: n for n, job_id in enumerate(waiting)}
    rank = {"in_progress": 0, "queued": 1, "scheduled": 2}

    def key(numbered: tuple[int, dict[str, Any]]) -> tuple[int, float | int | str, int]:
        newest, row = numbered
        group = rank.get(row["status"], 3)
        if group == 1:  # a book waiting for its parts (not in a queue) after those that are
            return group, place.get(row["id"], len(place)), newest
        if group == 2:
            return group, row["scheduled_for"] or "", newest
        return group, 0, newest

    return [row for _, row in sorted(enumerate(rows), key=key)]


_DESCRIBED = re.compile(r"narrate (.+) \(\d+ sentences\) -> ", re.DOTALL)  # jobs/api/submit.py's description
_NOT_IN_NAMES = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]+')


def book_facts(r: redis.Redis, job_ids: list[str]) -> dict[str, dict[str, str | None]]:
    """What the pages show of each narration besides its status, in one round trip: its title (the
    `--title` it was given, else the document's own: its metadata title, else its file name without
    the extension), the stem of its output file, and its voice (a saved voice by name)."""
    found: dict[str, dict[str, str | None]] = {}
    for job in Job.fetch_many(job_ids, connection=r, serializer=JSONSerializer):
        if job is not None:
            meta = job.meta or {}
            output = meta.get("output")
            found[job.id] = {
                "title": title_of(job),
                "stem": PurePosixPath(output).stem if output else None,
                "voice": meta.get("voice_name") or meta.get("voice"),
            }
    return found


def title_of(job: Job) -> str:
    """A narration's book title (see `book_facts`)."""
    try:
        spec = job.args[0] if job.args else {}
    except Exception:  # noqa: BLE001 - a record this server cannot read has no --title to show
        spec = {}
    given = spec.get("title") if isinstance(spec, dict) else None
    if isinstance(given, str) and given.strip():
        return given.strip()
    described = _DESCRIBED.match(job.description or "")
    if described and described.group(1).strip():
        return described.group(1).strip()
    document = str((job.meta or {}).get("document") or job.id)
    return PurePosixPath(document).stem or document


def file_title(title: str) -> str:
    """A title as a file name: no path separators, quotes, control or bidi characters, not too long."""
    name = " ".join(_NOT_IN_NAMES.sub(" ", without_bidi(title)).split()).strip(" .")
    return name[:120].rstrip(" .") or "narration"


def download_name(title: str, stem: str | None, name: str) -> str:
    """The name a download of output `name` (relative to the book's folder: "harbor-11d97576cb.m4b",
    "harbor-11d97576cb/01 - One.mp3") is saved under: the book's title in place of the output's
    stem ("Harbor.m4b", "Harbor - 01 - One.mp3")."""
    rest = name[len(stem) :] if stem and name.startswith(stem) else f"/{name}"
    head, *folders = rest.split("/")  # ".m4b", " - Part 2.mp3"; or "" and the names under the book's folder
    head = _NOT_IN_NAMES.sub("", without_bidi(head))
    return " - ".join([file_title(title) + head, *(file_title(p) for p in folders if p)])


def file_download_name(r: redis.Redis, job_id: str, name: str) -> str:
    """`download_name` of a narration's output file (its Content-Disposition)."""
    facts = book_facts(r, [job_id]).get(job_id)
    if facts is None:
        return file_title(PurePosixPath(name).name)
    return download_name(facts["title"] or job_id, facts["stem"], name)
