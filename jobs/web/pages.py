"""The pages for people: New (documents, a voice, the options of `narrate submit`), Queue (every job
of the queues, from Redis: a reload, a restart or another browser shows the same), Job (live
progress by server-sent events, errors, downloads) and Books (the finished ones: player, chapter
jumps, downloads, delete). They parse a form, call the same functions as the HTTP API (which call
jobs/api), and render a template; every action is a plain form POST answered by a redirect, so
each works without script and a reload never repeats it."""

from __future__ import annotations

from datetime import datetime
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response
from narrate.jobs.api import submit as submit_api
from narrate.jobs.api import voice_actions as voices_api
from narrate.jobs.audio.tagging import read_cover
from narrate.jobs.documents.readers import ReadOptions, read_any
from narrate.jobs.documents.readers.summary import summarize
from narrate.jobs.errors import BadInput, JobNotFound, NarrateError
from narrate.jobs.queue.cancel import cancel as cancel_job
from narrate.jobs.queue.reprioritize import set_priority
from narrate.jobs.queue.states import ENDED_API, State
from narrate.jobs.voices.clips import PANGRAM
from narrate.jobs.web import flash, narrations, proof_routes, submitting, views
from narrate.jobs.web.auth import SIGNED_IN
from narrate.jobs.web.errors import ApiError, status_of
from narrate.jobs.web.login import local_path
from narrate.jobs.web.outputs import AUDIO, OutputFile
from narrate.jobs.web.state import Web, WebDep, get_web
from narrate.jobs.web.templating import render
from narrate.jobs.web.uploads import Form, read_form
from starlette.concurrency import run_in_threadpool

router = APIRouter(include_in_schema=False, dependencies=[SIGNED_IN])
MISSING = "There is no narration by that id: it was deleted, it expired, or the link is wrong."
# The New page offers every field of the form (jobs/web/submitting.py FORM, made from the request model): these
# are laid out by hand (new.html, _book.html: the document, the voice, the output, the time, the tags, the chapters
# of a chosen file), the rest are made from the form's schema (``control`` in new.html), the proof pass and the
# read-along in a fieldset of their own. A callback is a program's (the API's), not a person's.
PLACED = (
    "file",
    "text",
    "voice",
    "voice_sample",
    "model",
    "format",
    "split",
    "subtitles",
    "language",
    "cover",
    "feed",
    "priority",
    "in",
    "at",
    "title",
    "series",
    "author",
    "narrator",
    "year",
    "chapters",
)
FOR_PROGRAMS = ("callback_url",)
CHECKS = ("proof", "retakes", "readalong", "word_timings")
MORE = tuple(n for n in submitting.FIELDS if n not in (*PLACED, *FOR_PROGRAMS, *CHECKS))
REPEATED_INPUTS = 3  # inputs offered for a field the form takes again and again (cast_voice)


def _controls(names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Each field as the page's ``control`` lays it out: its name as a label, its description as a hint."""
    return [{"name": n, "label": n.replace("_", " ").capitalize(), **submitting.FIELDS[n]} for n in names]


def _new_context(web: Web, values: dict[str, Any]) -> dict[str, Any]:
    return {
        "voices": _voices(web),
        "formats": submitting.FORMAT_NAMES,
        "priorities": submitting.FIELDS["priority"]["enum"],
        "values": values,
        "pangram": PANGRAM,
        "models": views.offered_models(web.settings),
        "checks": _controls(CHECKS),
        "more": _controls(MORE),
        "repeated": range(REPEATED_INPUTS),
    }


# The paged pages' `after`: the id of the last narration of the page before.
After = Annotated[str | None, Query(max_length=200)]


def back_to(request: Request, path: str, said: str | None = None, error: str | None = None) -> RedirectResponse:
    """A redirect after a form's action (303: the browser GETs it, a reload repeats nothing); what
    the action said is shown once by the page it goes to (jobs/web/flash.py: never in the URL)."""
    answer = RedirectResponse(local_path(path), status_code=303)
    flash.keep(get_web(request).redis, answer, request.url.scheme == "https", said=said, error=error)
    return answer


def _flash(request: Request) -> dict[str, str | None]:
    """What the last action said, for the page (never the query string: anyone can write a link)."""
    return flash.take(get_web(request).redis, request)


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/queue", status_code=303)


@router.get("/queue")
def queue_page(request: Request, web: WebDep, after: After = None) -> Response:
    return render(request, "queue.html", {**_queue(web, after), **_flash(request)})


@router.get("/queue/rows")
def queue_rows(request: Request, web: WebDep, after: After = None) -> Response:
    """The queue's rows alone: the Queue page polls them (htmx)."""
    return render(request, "_rows.html", _queue(web, after))


ENDED_A_PAGE = 50  # ended narrations the Queue page shows at once (then a link to older ones)
BOOKS_A_PAGE = 48


def _queue(web: Web, after: str | None) -> dict[str, Any]:
    """Every narration that runs, waits (as a worker takes them) or is scheduled, then the ended ones,
    newest first, a page of them (after narration `after`): the rows and the link to older ones."""
    active = views.listed_page(web.redis, web.settings, (State.STARTED.api, State.QUEUED.api, State.SCHEDULED.api))[0]
    ended, more = views.listed_page(web.redis, web.settings, ENDED_API, ENDED_A_PAGE, after)
    shown = [job for job in ended if not job.get("superseded_by")]  # one card a book: its redo stands for it
    jobs = _titled(web, views.queue_order(web.redis, web.settings, active) + shown)
    return {"jobs": jobs, "after": after, "older": ended[-1]["id"] if more and ended else None}


def _titled(web: Web, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The jobs (page copies) with what the pages show of each besides the API's fields: the book's
    title, its voice, the name each file downloads under, its format and the day it was made."""
    facts = views.book_facts(web.redis, [j["id"] for j in jobs])
    shown = []
    for job in jobs:
        known = facts.get(job["id"], {})
        title = known.get("title") or job["document"] or job["id"]
        outputs = [{**f, "download": views.download_name(title, known.get("stem"), f["name"])} for f in job["outputs"]]
        audio = _audio(job)
        shown.append(
            {
                **job,
                "title": title,
                "voice_shown": known.get("voice") or job["voice"],
                "outputs": outputs,
                "format": PurePosixPath(audio["name"]).suffix.lstrip(".").upper() if audio else None,
                "day": _day(job.get("ended_at") or job.get("created_at")),
            }
        )
    return shown


def _day(iso: str | None) -> str | None:
    """An ISO time as the day it fell on here (2026-12-03)."""
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d") if iso else None
    except ValueError:
        return None


def _audio(job: dict[str, Any]) -> dict[str, Any] | None:
    """What the player plays: the book's audio file, or the audio inside its EPUB (`--format epub`)."""
    found = next((f for f in job["outputs"] if PurePosixPath(f["name"]).suffix.lower() in AUDIO), None)
    epub = next((f for f in job["outputs"] if PurePosixPath(f["name"]).suffix.lower() == ".epub"), None)
    return found or ({**epub, "url": f"/v1/narrations/{job['id']}/audio"} if epub else None)


@router.get("/jobs/{job_id}")
def job_page(request: Request, web: WebDep, job_id: str) -> Response:
    try:
        job = views.narration(web.redis, web.settings, job_id)
    except JobNotFound:  # the words are fixed: the id in the URL is anyone's text
        return render(request, "missing.html", {"message": MISSING}, status=404)
    [job] = _titled(web, [job])
    context = {
        "job": job,
        "audio": _audio(job),
        "terminal": job["status"] in ENDED_API,
        "ended": ENDED_API,  # the page stops following the job at these words (narrate.js)
        "proof": _proof(web, job),
        **_flash(request),
    }
    return render(request, "job.html", context)


def _proof(web: Web, job: dict[str, Any]) -> dict[str, Any] | None:
    """A completed narration's proof report (jobs/web/proof_routes.py), for its flagged sentences and their players."""
    if not job.get("proof") or job["status"] != "completed":
        return None
    try:
        return proof_routes.report(web, job["id"])
    except (NarrateError, ApiError):  # gone meanwhile: the page shows its counts alone
        return None


def _act(request: Request, web: Web, job_id: str, form: dict[str, str], action: str) -> RedirectResponse:
    back = form.get("back") or f"/jobs/{quote(job_id)}"
    try:
        said = _do(web, views.check_id(job_id), form, action)
    except (NarrateError, ApiError) as e:
        return back_to(request, back, error=flash.words_of(e))
    return back_to(request, "/queue" if action == "delete" else back, said=said)


def _do(web: Web, job_id: str, form: dict[str, str], action: str) -> str:
    if action == "cancel":
        return f"{job_id}: {cancel_job(web.redis, job_id, 'narrate serve page')}"
    if action == "resume":
        [did] = submit_api.resume(web.redis, [job_id], web.settings.queue)
        return f"{job_id}: {did}"
    if action == "priority":
        return set_priority(web.redis, web.settings.queue, job_id, form.get("priority", ""))
    if not form.get("confirm"):
        raise BadInput("tick 'yes, delete it' to delete the book and its files")
    removed = narrations.delete_narration(web, job_id)
    return f"deleted {job_id} and {len(removed['files'])} files"


async def form_fields(request: Request) -> dict[str, str]:
    """A small urlencoded form's text fields (the pages' buttons)."""
    got = await request.form()
    return {k: v for k, v in got.items() if isinstance(v, str)}


@router.post("/jobs/{job_id}/{action}")
async def act(
    request: Request, web: WebDep, job_id: str, action: Literal["cancel", "resume", "priority", "delete"]
) -> Response:
    """A job's buttons: cancel, resume, priority (a waiting job) and delete (an ended one, ticked)."""
    return await run_in_threadpool(_act, request, web, job_id, await form_fields(request), action)


@router.get("/books")
def books_page(request: Request, web: WebDep, after: After = None) -> Response:
    """The finished books, newest first, a page at a time (a link to older ones)."""
    rows, more = views.listed_page(web.redis, web.settings, (State.FINISHED.api,), BOOKS_A_PAGE, after)
    ids = [row["id"] for row in rows if not row.get("superseded_by")]  # one card a book: its redo stands for it
    found = views.finished_narrations(web.redis, web.settings, ids)  # deleted: left out
    titled = _titled(web, [job for job, _ in found])
    books = [
        {"job": shown, "audio": _audio(shown), "cover": _cover(job, files) is not None}
        for (job, files), shown in zip(found, titled, strict=True)
    ]
    older = rows[-1]["id"] if more and rows else None
    return render(request, "books.html", {"books": books, "older": older, "after": after, **_flash(request)})


def _cover(job: dict[str, Any], files: list[OutputFile]) -> tuple[bytes, str] | None:
    """The cover art embedded in the narration's audio file."""
    audio = _audio(job)
    found = [f for f in files if audio and f.name == audio["name"]]
    return read_cover(found[0].path) if found else None


@router.get("/jobs/{job_id}/cover")
def cover(web: WebDep, job_id: str) -> Response:
    """The cover art embedded in a finished book's audio file (404 if it has none)."""
    found = _cover(*views.narration_and_files(web.redis, web.settings, job_id))
    if found is None:
        raise ApiError(404, f"narration {job_id[:80]} has no cover art")
    return Response(found[0], media_type=found[1], headers={"Cache-Control": "private, max-age=3600"})


def _voices(web: Web) -> list[dict[str, Any]]:
    return voices_api.list_voices(web.redis, web.settings.model)


@router.get("/new")
def new_page(request: Request, web: WebDep) -> Response:
    return render(request, "new.html", {**_new_context(web, {}), **_flash(request)})


def inspect(form: Form) -> dict[str, Any]:
    """The first document's title, author, chapters and first sentence (as `narrate chapters`)."""
    files = form.files.get("file", [])
    if not files:
        return {}
    doc = read_any(files[0].path, ReadOptions(form.value("input_format")))
    items = summarize(doc)
    meta = doc.meta
    return {
        "name": files[0].name,
        "more": len(files) - 1,
        "title": doc.title,
        "author": meta.author if meta else "",
        "series": (f"{meta.series} #{meta.series_index}" if meta.series_index else meta.series) if meta else "",
        "has_cover": bool(meta and meta.cover),
        "chapters": items,
        "sentences": len(doc.sentences),
        "seconds": sum(c.seconds for c in items),
        "first": str(doc.sentences[0]) if doc.sentences else "",
    }


@router.post("/new/inspect")
async def new_inspect(request: Request, web: WebDep) -> Response:
    """What the chosen documents hold (htmx swaps it into the New page when a file is chosen)."""
    form = await read_form(request, web.settings.home)
    try:
        book = await run_in_threadpool(inspect, form)
        error = None
    except NarrateError as e:
        book, error = {}, form.plain(str(e))
    finally:
        form.remove()
    return render(request, "_book.html", {"book": book, "error": error, "values": {}})


@router.post("/new")
async def new_submit(request: Request, web: WebDep) -> Response:
    form = await read_form(request, web.settings.home)
    try:
        made = await run_in_threadpool(submitting.submit, web, form)
    except (NarrateError, ApiError) as e:
        values: dict[str, Any] = {k: form.shown(k) for k in submitting.FIELDS}  # shown again, files aside
        values["cast_voice"] = form.fields.get("cast_voice", [])
        context = {**_new_context(web, values), "error": form.plain(flash.words_of(e))}
        return render(request, "new.html", context, status=status_of(e))
    finally:
        form.remove()
    if len(made) == 1:
        job = made[0]
        said = "already submitted: this is its job" if job["duplicate"] else "submitted"
        return back_to(request, f"/jobs/{quote(job['id'])}", said=said)
    dupes = sum(1 for j in made if j["duplicate"])
    return back_to(
        request,
        "/queue",
        said=f"submitted {len(made) - dupes} documents" + (f" ({dupes} already queued)" if dupes else ""),
    )
