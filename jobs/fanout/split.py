"""One book across many hosts: the book becomes part jobs (any worker host may take one) and the book's
own job, which waits for all of them (rq dependencies) and then stitches the book from their audio
exactly as a single-host job would (it is the same job function, jobs.task.job.narrate_job, handed the
list of its parts).

How a book is cut (``--fan-out``): ``chapters`` (a part per chapter; text before the first chapter
goes with it), ``N`` (parts of about N minutes of estimated speaking time, cut at paragraph ends),
``none`` (one job, as before). Default: ``chapters`` when the document has at least two chapters and
at least two worker hosts are registered on the server, else ``none``.

Redis memory: the parts' audio waits in Redis for the stitch (jobs.fanout.partaudio). When the estimate of
all parts' audio (16-bit samples, before FLAC) is over ``NARRATE_FANOUT_MAX_MB``, only the first parts
that fit are fanned out; the book job synthesizes the rest itself, on its host (a warning says so)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import redis
from narrate.jobs.book.plan import spoken_paragraphs
from narrate.jobs.book.spec import JobSpec, job_timeout
from narrate.jobs.counts import count
from narrate.jobs.documents.budgets import frame_budget, speaking_seconds
from narrate.jobs.documents.documents import Document
from narrate.jobs.errors import BadInput
from narrate.jobs.settings import SAMPLE_RATE, Settings
from rq import Queue, Retry, Worker
from rq.exceptions import DuplicateJobError
from rq.job import Job

PART_FUNCTION = "narrate.jobs.parts.part_job"
HOST_FIELD = "narrate_host"  # worker hash field: the worker's host identity (jobs.fanout.split counts hosts)
_MINUTES = re.compile(r"^\d+(\.\d+)?$")


def check_fan_out(value: str | None, option: str = "--fan-out") -> str | None:
    """`--fan-out`: chapters, none or a number of minutes (None: the default rule)."""
    if value is None or value in ("chapters", "none"):
        return value
    if _MINUTES.match(value) and float(value) > 0:
        return value
    raise BadInput(f"{option} {value!r}: use chapters, none, or the minutes of audio a part should hold (e.g. 30)")


@dataclass(frozen=True)
class Part:
    book: str  # the book job's id
    index: int  # 0, 1, ...
    first: int  # its first sentence
    end: int  # one past its last sentence

    @property
    def job_id(self) -> str:
        return f"{self.book}-part{self.index:03d}"

    def to_json(self) -> dict:
        return {"book": self.book, "index": self.index, "first": self.first, "end": self.end}

    @classmethod
    def from_json(cls, data: dict) -> Part:
        return cls(str(data["book"]), int(data["index"]), int(data["first"]), int(data["end"]))


def worker_hosts(r: redis.Redis) -> int:
    """Distinct hosts with a registered narrate worker."""
    workers = Worker.all(connection=r)
    with r.pipeline(transaction=False) as p:
        for w in workers:
            p.hget(w.key, HOST_FIELD)
        return len({h for h in p.execute() if h})


def choose(r: redis.Redis, doc: Document, asked: str | None) -> str:
    """What `--fan-out` means for this document (the default rule in the module docstring)."""
    if asked is not None:
        return asked
    return "chapters" if len(doc.chapters) >= 2 and worker_hosts(r) >= 2 else "none"


def cut(doc: Document, how: str, lexicon: list[list[str]] | None = None) -> list[tuple[int, int]]:
    """Sentence ranges [first, end) of the parts, at chapter starts or paragraph ends."""
    paragraphs = spoken_paragraphs(doc, lexicon)
    starts, at = [], 0
    for para in paragraphs:
        starts.append(at)
        at += len(para)
    total = at
    if how == "chapters":
        bounds = sorted({starts[p] for p, _ in doc.chapters if 0 < starts[p] < total})
    else:
        limit, bounds, acc = float(how) * 60, [], 0.0
        for p, para in enumerate(paragraphs):
            acc += sum(speaking_seconds(s) for s in para)
            end = starts[p] + len(para)
            if acc >= limit and end < total:
                bounds.append(end)
                acc = 0.0
    edges = [0, *bounds, total]
    return [(a, b) for a, b in zip(edges, edges[1:], strict=False) if b > a]


def within_cap(
    doc: Document, ranges: list[tuple[int, int]], cap_mb: float, lexicon: list[list[str]] | None = None
) -> tuple[list, str | None]:
    """The first ranges whose estimated audio fits in `cap_mb` of Redis, and a warning when not all do."""
    spoken = [s for para in spoken_paragraphs(doc, lexicon) for s in para]
    kept, used = [], 0.0
    for a, b in ranges:
        size = sum(speaking_seconds(s) for s in spoken[a:b]) * SAMPLE_RATE * 2 / 1e6
        if used + size > cap_mb:
            break
        kept.append((a, b))
        used += size
    if len(kept) == len(ranges):
        return kept, None
    rest = len(spoken) - (kept[-1][1] if kept else 0)
    last = f"the last {count(rest, 'sentence')} {'is' if rest == 1 else 'are'}"
    return kept, (
        f"the book's audio (about {_estimate_mb(spoken):.0f} MB) would not fit in NARRATE_FANOUT_MAX_MB={cap_mb:g} "
        f"of Redis: {len(kept)} of {len(ranges)} parts are fanned out, {last} synthesized "
        "by the book's own job on the host that stitches it"
    )


def _estimate_mb(spoken: list[str]) -> float:
    return sum(map(speaking_seconds, spoken)) * SAMPLE_RATE * 2 / 1e6


def enqueue_parts(
    q: Queue,
    book_id: str,
    spec: JobSpec,
    doc: Document,
    ranges: Sequence[tuple[int, int]],
    settings: Settings,
    keep_s: int,
    document: str,
) -> list[str]:
    """Enqueue the part jobs of a book about to be enqueued; returns their ids (raises
    DuplicateJobError when the book job exists, or another submit is making it right now)."""
    r = q.connection
    if not r.set(f"narrate:fanout-making:{book_id}", 1, nx=True, ex=60) or r.exists(Job.key_for(book_id)):
        raise DuplicateJobError(book_id)
    parts = [Part(book_id, k, a, b) for k, (a, b) in enumerate(ranges)]
    spoken = [s for para in spoken_paragraphs(doc, spec.lexicon) for s in para]
    with r.pipeline() as p:
        for part in parts:
            n = part.end - part.first
            budgets = [frame_budget(s, spec.max_frames) for s in spoken[part.first : part.end]]
            job = q.create_job(
                PART_FUNCTION,
                args=(spec.to_json(), part.to_json()),
                job_id=part.job_id,
                timeout=job_timeout(budgets, settings.runaway_retries),
                result_ttl=keep_s,
                failure_ttl=keep_s,
                description=f"narrate part {part.index + 1}/{len(parts)} of {doc.title} ({count(n, 'sentence')})",
                meta={
                    "progress": {
                        "done": 0,
                        "total": n,
                        "audio_seconds": 0.0,
                        "realtime_factor": None,
                        "eta_seconds": None,
                    },
                    "max_retries": settings.max_attempts - 1,
                    "document": document,
                    "book": book_id,
                    "part": part.index,
                },
                retry=Retry(max=settings.max_attempts - 1) if settings.max_attempts > 1 else None,
            )
            q.enqueue_job(job, pipeline=p)
        p.execute()
    return [part.job_id for part in parts]
