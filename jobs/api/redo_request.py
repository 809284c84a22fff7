"""`narrate redo`: chosen sentences of a finished book rendered again (another seed, a corrected text, lexicon
entries of their own), or takes accepted by ear, as a new job for the same book.

The new job's spec is the old one's with per-sentence ``overrides`` and ``accepted`` (jobs/book/spec.py); the plan
applies them, so only the changed sentences get new checkpoint keys and every other sentence comes from the
sentence cache. It writes the same output paths (the old job's files are narrate's own, so the claim replaces them),
and once its files are in place it takes over the old job's feed episodes, replaces its library export and marks
the old job superseded (jobs/task/superseding.py). Sentence numbers are people's: 1 first, as the SubRip
subtitles number their cues (the timing manifest's and the proof report's `index` is the number less one).
Nothing is enqueued unless every check passes. Each error names the option it is about (`param`: sentences, accept,
text, seed, lexicon, flagged) in the words of the front end that asked (`Words`: the command line's flags, the HTTP
API's fields, the Job page's controls); a job that cannot be redone is a Conflict (NotFinished, NotRedoable)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import redis
from narrate.jobs.api.submit import JOB_FUNCTION, job_id_for
from narrate.jobs.api.unfinished import not_finished
from narrate.jobs.book.spec import MAX_OVERRIDE_TEXT, MAX_OVERRIDES, BadSpec, JobSpec, corrected
from narrate.jobs.constraints import MAX_SEED
from narrate.jobs.counts import count
from narrate.jobs.documents.documents import Document
from narrate.jobs.errors import BadInput, Conflict, JobNotFound
from narrate.jobs.outputs import ownership
from narrate.jobs.queue.lifecycle import requeue_front
from narrate.jobs.queue.queues import queue_for
from narrate.jobs.queue.runs import base_queue_of
from narrate.jobs.server import store
from narrate.jobs.server.durability import durable_writes
from narrate.jobs.server.records import check_key_types, find, queue
from narrate.jobs.settings import DAY_S, Settings
from narrate.jobs.task.superseding import REDO_OF, SUPERSEDED_BY
from rq import Retry
from rq.exceptions import DuplicateJobError
from rq.job import Job, JobStatus

NOT_YET = {"realtime_factor": None, "eta_seconds": None}


@dataclass(frozen=True)
class Words:
    """How a front end names a redo's options in its messages."""

    accept: str = "--accept"
    flagged: str = "--flagged"
    text: str = "--text"
    seed: str = "--seed"
    proof: str = "--proof"


CLI = Words()
API = Words(accept="accept", flagged="flagged", text="text", seed="seed", proof="proof")


class NotRedoable(Conflict):
    """The job cannot be redone (facts: `job_id`; `why`: not_a_book, superseded, replaced (its output written since
    by job `by`: redo that one), expired (its document or voice sample is no longer stored), unreadable)."""

    code = "not_redoable"

    def __init__(self, message: str, job_id: str, why: str, by: str | None = None) -> None:
        super().__init__(message, facts={"job_id": job_id, "why": why, "by": by})


@dataclass(frozen=True)
class Change:
    """What a redo asks: sentence numbers as people count them (1 first)."""

    sentences: tuple[int, ...] = ()
    seed: int | None = None
    text: str | None = None
    lexicon: list[list[str]] | None = None
    accept: tuple[int, ...] = ()
    flagged: bool = False  # every sentence the job's proof pass left flagged, not accepted


@dataclass(frozen=True)
class Redone:
    job: Job
    of: str  # the job it redoes
    sentences: list[int]  # rendered again (1 first)
    accepted: list[int]  # accepted by this redo (1 first)
    texts: dict[int, str] = field(default_factory=dict)  # each of them as the document (or a redo) writes it
    note: str | None = None  # e.g. "replaces book.m4b written by job X"
    duplicate: str | None = None  # "queued", "done" or "resumed": the same redo was asked before


def redo(
    settings: Settings, r: redis.Redis, job_id: str, change: Change, priority: str = "high", words: Words = CLI
) -> Redone:
    """Check everything, then enqueue the redo (acknowledged once on the server's disk). `words`: how the caller
    names the options, for its messages."""
    old, spec, doc = _finished_book(r, job_id)
    result = old.return_value(refresh=True) or {}
    n = len(doc.sentences)
    redone = _chosen(change, spec, result, n, job_id, words)
    accepted = _numbers(change.accept, n, job_id, words.accept, "accept")
    if not redone and not accepted:
        raise BadInput(
            "name the sentences to render again (numbers as the subtitles count them, 1 first), or "
            f"{words.flagged}, or {words.accept} N to keep a take as it is",
            param="sentences",
        )
    if both := sorted(set(redone) & set(accepted)):
        raise BadInput(f"sentence {both[0]} cannot be rendered again and accepted at once", param="accept")
    new_spec = _changed(spec, doc, change, redone, accepted, words)
    if new_spec == spec:
        raise BadInput(
            f"nothing would change: job {job_id} already reads those sentences so and accepts those takes",
            param="sentences",
        )
    base = _base_queue(base_queue_of(old.origin, settings.queue))  # a `narrate run` job's: the workers' queue
    new_id = job_id_for(new_spec, base)
    with durable_writes(r):
        return _enqueue(settings, r, old, new_spec, new_id, queue_for(base, priority), doc, redone, accepted)


def _finished_book(r: redis.Redis, job_id: str) -> tuple[Job, JobSpec, Document]:
    old = find(r, job_id)
    if old is None:
        raise JobNotFound(f"no job {job_id!r} (wrong id, or it expired)")
    if old.func_name != JOB_FUNCTION:
        raise NotRedoable(
            f"job {job_id} is not a book's narration (a part of one, or a clip): redo the book's job",
            job_id,
            "not_a_book",
        )
    refused = not_finished(r, job_id, "redo")
    if refused is not None:
        raise refused
    meta = old.get_meta(refresh=False) or {}
    if meta.get(SUPERSEDED_BY):
        raise NotRedoable(
            f"job {job_id} was redone as job {meta[SUPERSEDED_BY]}: redo that one",
            job_id,
            "superseded",
            meta[SUPERSEDED_BY],
        )
    try:
        spec = JobSpec.from_json(old.args[0])
    except (BadSpec, IndexError, TypeError) as e:
        raise NotRedoable(f"job {job_id}'s spec cannot be read: {e}", job_id, "unreadable") from None
    result = old.return_value(refresh=True) or {}
    later = ownership.replaced_by(r, result.get("output_relative") or spec.output, job_id)
    if later:
        raise NotRedoable(
            f"job {job_id}'s output was replaced since by job {later}: redo that one", job_id, "replaced", later
        )
    try:
        doc = store.get_document(r, spec.document)
    except LookupError:
        raise NotRedoable(
            f"job {job_id}'s document is no longer stored (it is kept NARRATE_KEEP_DAYS days after its "
            "job): submit the book again",
            job_id,
            "expired",
        ) from None
    for ref in spec.voice_refs().values():
        if ref.sample and not r.exists(store.voice_key(ref.sample)):
            raise NotRedoable(
                f"job {job_id}'s voice sample is no longer stored: submit the book again", job_id, "expired"
            )
    return old, spec, doc


def _numbers(
    given: tuple[int, ...], n: int, job_id: str, what: str = "sentence", param: str = "sentences"
) -> list[int]:
    for number in given:
        if not 1 <= number <= n:
            raise BadInput(f"{what} {number} is not in job {job_id}'s book: its sentences are 1-{n}", param=param)
    if len(set(given)) > MAX_OVERRIDES:
        raise BadInput(f"at most {MAX_OVERRIDES} sentences a redo", param=param)
    return sorted(set(given))


def _chosen(change: Change, spec: JobSpec, result: dict, n: int, job_id: str, words: Words) -> list[int]:
    """The sentences to render again (1 first): those named, and with --flagged those the proof pass left
    flagged and nobody accepted."""
    chosen = set(_numbers(change.sentences, n, job_id))
    if change.flagged:
        proof = result.get("proof") or {}
        if not proof:
            raise BadInput(
                f"job {job_id} was not proofed ({words.proof}): {words.flagged} has no flags to go by", param="flagged"
            )
        taken = set(spec.accepted or ())
        chosen |= {
            int(e["index"]) + 1
            for e in proof.get("sentences") or []
            if e.get("outcome") == "still_flagged" and int(e["index"]) not in taken
        }
        if not chosen and not change.accept:
            raise BadInput(f"job {job_id} has no sentence left flagged: nothing to render again", param="flagged")
    if change.text is not None:
        if len(chosen) != 1 or change.flagged:
            raise BadInput(f"{words.text} corrects one sentence; {count(len(chosen), 'sentence')} named", param="text")
        if not corrected(change.text) or len(change.text) > MAX_OVERRIDE_TEXT:
            raise BadInput(
                f"{words.text} is empty (once control characters are taken out) or longer than "
                f"{MAX_OVERRIDE_TEXT} characters",
                param="text",
            )
    if change.seed is not None and not 0 <= change.seed <= MAX_SEED:
        raise BadInput(f"{words.seed} {change.seed} is out of range 0-{MAX_SEED}", param="seed")
    return sorted(chosen)


def _changed(
    spec: JobSpec, doc: Document, change: Change, redone: list[int], accepted: list[int], words: Words
) -> JobSpec:
    """The old spec with the redo's overrides and accepted takes (0-based indices in the spec)."""
    overrides = {k: dict(v) for k, v in (spec.overrides or {}).items()}
    for number in redone:
        i = number - 1
        entry = overrides.setdefault(str(i), {})
        if change.text is not None:
            entry["text"] = corrected(change.text)
        if change.lexicon:
            entry["lexicon"] = [[w, s] for w, s in dict([*entry.get("lexicon", []), *change.lexicon]).items()]
        if change.seed is not None:
            if entry.get("seed", spec.seed_of(doc.sentence_voices[i])) == change.seed and len(redone) == 1:
                raise BadInput(f"sentence {number} is already read with seed {change.seed}: give another", param="seed")
            entry["seed"] = change.seed
        elif change.text is None and not change.lexicon:  # another take: the next seed
            entry["seed"] = (entry.get("seed", spec.seed_of(doc.sentence_voices[i])) + 1) % (MAX_SEED + 1)
    keep = set(spec.accepted or ()) - {number - 1 for number in redone}  # a take rendered again is heard again
    taken = sorted(keep | {number - 1 for number in accepted})
    if len(overrides) > MAX_OVERRIDES or len(taken) > MAX_OVERRIDES:
        raise BadInput(f"a book's redos may change or accept at most {MAX_OVERRIDES} sentences", param="sentences")
    try:
        new = JobSpec.from_json(spec.to_json() | {"overrides": overrides or None, "accepted": taken or None})
    except BadSpec as e:
        raise BadInput(str(e).removeprefix("job spec: "), param="lexicon" if change.lexicon else "text") from None
    return new


def _base_queue(origin: str) -> str:
    for suffix in ("-high", "-low"):
        if origin.endswith(suffix):
            return origin.removesuffix(suffix)
    return origin


def _enqueue(
    settings: Settings,
    r: redis.Redis,
    old: Job,
    spec: JobSpec,
    new_id: str,
    queue_name: str,
    doc: Document,
    redone: list[int],
    accepted: list[int],
) -> Redone:
    over = spec.sentence_overrides()
    texts = {k: over.get(k - 1, {}).get("text", doc.sentences[k - 1]) for k in (*redone, *accepted)}
    done = Redone(old, old.id, redone, accepted, texts)
    earlier = find(r, new_id)
    if earlier is not None and earlier.get_status(refresh=False) == JobStatus.FINISHED:
        return _again(r, replace(done, job=earlier), queue_name)  # the same redo was asked and done before
    q = queue(r, queue_name)
    check_key_types(r, {q.key: "list", "rq:queues": "set"})
    keep_s = settings.keep_days * DAY_S + int(old.timeout or 0)
    store.keep(r, spec.document, [ref.sample for ref in spec.voice_refs().values() if ref.sample], keep_s)
    if spec.cover:
        r.expire(store.cover_key(spec.cover), keep_s, gt=True)
    final = settings.output_dir.expanduser().resolve() / spec.output
    note = ownership.claim(r, spec.output, new_id, final, spec.overwrite, keep_s)
    for fmt in filter(None, spec.subtitles.split(",")):
        side = Path(spec.output).with_suffix(f".{fmt}").as_posix()
        ownership.check(r, side, new_id, final.with_suffix(f".{fmt}"), spec.overwrite)
    meta = old.get_meta(refresh=False) or {}
    kept = {k: meta[k] for k in ("document", "output", "voice", "voice_name", "voice_sample", "cast") if k in meta}
    what = ", ".join(
        filter(
            None, [f"sentences {ranges(redone)}" if redone else "", f"accepted {ranges(accepted)}" if accepted else ""]
        )
    )
    job = q.create_job(
        JOB_FUNCTION,
        args=(spec.to_json(),),
        job_id=new_id,
        timeout=int(old.timeout) if old.timeout else None,
        result_ttl=settings.keep_days * DAY_S,
        failure_ttl=settings.keep_days * DAY_S,
        description=f"redo {what} of {old.id}: {doc.title} -> {spec.output}",
        meta={
            "progress": {"done": 0, "total": len(doc.sentences), "audio_seconds": 0.0, **NOT_YET},
            "max_retries": settings.max_attempts - 1,
            **kept,
            REDO_OF: old.id,
            "redo": {"sentences": redone, "accepted": accepted},
        },
        retry=Retry(max=settings.max_attempts - 1) if settings.max_attempts > 1 else None,
        status=JobStatus.QUEUED,
    )
    try:
        return replace(done, job=q.enqueue_job(job, unique=True), note=note)
    except DuplicateJobError:  # the same redo was asked before (or meanwhile)
        return _again(r, replace(done, job=find(r, new_id) or job, note=note), queue_name)


def _again(r: redis.Redis, done: Redone, queue_name: str) -> Redone:
    """The same redo asked again: finished (its output still its own) -> that job; failed or canceled -> it runs
    again from its checkpoints; waiting or running -> that job."""
    job = done.job
    state = job.get_status(refresh=False)
    if state == JobStatus.FINISHED:
        result = job.return_value(refresh=True) or {}
        if not ownership.replaced_by(r, result.get("output_relative", ""), job.id):
            return replace(done, duplicate="done")
        raise NotRedoable(
            f"that redo ran as job {job.id}, whose output was replaced since: redo the newest job",
            done.of,
            "replaced",
            job.id,
        )
    if state in (JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
        return replace(done, job=requeue_front(r, job, "resume", into=queue_name), duplicate="resumed")
    return replace(done, duplicate="queued")


def ranges(numbers: list[int]) -> str:
    """1, 3-5, 9: sentence numbers in short."""
    runs: list[list[int]] = []
    for x in numbers:
        if runs and x == runs[-1][1] + 1:
            runs[-1][1] = x
        else:
            runs.append([x, x])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)
