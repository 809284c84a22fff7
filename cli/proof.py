"""`narrate proof JOB`: the proof pass's report of a job narrated with --proof (jobs/api/proof_report.py): its counts
and each flagged sentence (chapter, time in the book, text, what was heard, what is wrong, the takes tried), as
text, JSON or CSV."""

from __future__ import annotations

import csv
import json
import sys
from typing import Any

import click
from narrate.cli.common import one_line_errors, settings_from_env
from narrate.jobs.api import proof_report as proofs
from narrate.jobs.errors import printable
from narrate.jobs.humanize import moment
from narrate.jobs.server.connection import Connection

CSV_COLUMNS = (
    "sentence",
    "index",
    "chapter",
    "chapter_title",
    "start_s",
    "end_s",
    "outcome",
    "reasons",
    "problem",
    "text",
    "spoken",
    "transcript",
    "takes",
    "kept_take",
    "seeds",
    "take_verdicts",
)


@click.command()
@click.argument("job_id")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the flagged sentences as CSV, a header line first.")
@one_line_errors
def proof(job_id, as_json, as_csv) -> None:
    """List the sentences of a job narrated with --proof whose first take was flagged: where each is in the
    book, its text, what the kept take was heard as, what is wrong, the takes tried; still flagged or fixed."""
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    settings = settings_from_env()
    with Connection(settings) as conn:
        rep = proofs.report(conn.redis, job_id)
    if as_json:
        click.echo(json.dumps(rep, ensure_ascii=False))
    elif as_csv:
        write_csv(rep)
    else:
        for line in text_lines(rep):
            click.echo(line)


def text_lines(rep: dict[str, Any]) -> list[str]:
    """The report for a terminal: one line of counts, then a block per sentence (texts on one printable line)."""
    lines = [f"{rep['id']}: {rep['status']}; proof: {proofs.summary_line(rep)}"]
    sentences = rep["sentences"]
    if not rep["complete"]:
        lines.append("the flagged sentences are listed once the job has finished")
        return lines
    if sentences is None:
        lines.append("its result lists no sentences (a worker older than the report finished it)")
        return lines
    if not sentences:
        lines.append("no sentence was flagged")
    for s in sentences:
        where = [f"sentence {s['index'] + 1}"]  # counted from 1, as narrate redo and the subtitles count
        if s.get("chapter") is not None:
            where.append(f"chapter {s['chapter']} ({printable(s.get('chapter_title') or '')})")
        if s.get("start_s") is not None:
            where.append(f"at {moment(s['start_s'])}-{moment(s['end_s'])}")
        lines += ["", f"{s['outcome'].replace('_', ' ')}: {', '.join(where)}", f"  text:   {printable(s['text'])}"]
        if _words(s["spoken"]) != _words(s["text"]):
            lines.append(f"  spoken: {printable(s['spoken'])}")
        lines += [f"  heard:  {printable(s['transcript'])}", f"  wrong:  {printable(s['problem'])}"]
        for n, t in enumerate(s["takes"], 1):
            kept = "  (kept)" if t["kept"] else ""
            lines.append(f"  take {n}: seed {t['seed']}, {printable(t['said'])}{kept}")
    if rep["sentences_left_out"]:
        lines += [
            "",
            f"{rep['sentences_left_out']} more flagged sentence(s) not listed (the result keeps "
            f"{len(sentences or [])})",
        ]
    return lines


def _words(text: str) -> str:
    return " ".join(text.split())


def write_csv(rep: dict[str, Any]) -> None:
    """One row per listed sentence (CSV_COLUMNS); lists joined: reasons and seeds by spaces, take verdicts by
    " | "."""
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(CSV_COLUMNS)
    for s in rep["sentences"] or []:
        takes = s["takes"]
        out.writerow(
            [
                s["index"] + 1,
                s["index"],
                s.get("chapter") or "",
                s.get("chapter_title") or "",
                s.get("start_s"),
                s.get("end_s"),
                s["outcome"],
                " ".join(s["reasons"]),
                s["problem"],
                s["text"],
                s["spoken"],
                s["transcript"],
                len(takes),
                s["kept"] + 1,
                " ".join(str(t["seed"]) for t in takes),
                " | ".join(t["said"] for t in takes),
            ]
        )
