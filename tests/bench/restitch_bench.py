"""The stitch of a redo (`narrate redo`): a long book stitched whole, then stitched again after one sentence was
rendered again, following the first stitch (jobs/audio/reuse.py), side by side; prints the times and JSON.

    .venv/bin/python tests/bench/restitch_bench.py [--hours 1] [--format m4b] [--runs 3] [--json FILE]

The book's checkpoints are built as the stitch benchmark builds them (tests/bench/stitch_bench.py: speech-like
sentences of 3-7 s, a chapter every 200 sentences, paragraphs of five). *Full*: every sentence ready, the job's
stitch from its planning on (every checkpoint verified, as `Plan.checkpointed` does), measured, encoded, muxed,
tagged and copied into place, its record and segments kept; this is what a redo costs without a record on its
host. *Redo*: one sentence in the middle of the book replaced by a new take of another length (another
checkpoint), then the same from planning on, following the full stitch's record: what a redo's job spends
after synthesizing its sentence. Each run starts from a copy of the full stitch's cache, so every redo run
finds what the first finds. The date, the machine's CPUs and load are in the JSON."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import stitch_bench
from narrate.jobs.audio.book_writer import BookWriter
from narrate.jobs.audio.reuse import Reuse, SegmentCache, fingerprint
from narrate.jobs.audio.segments import BLOCK_S, SEGMENT_S, Heard, Segmenter
from narrate.jobs.book.checkpoints import CheckpointStore, checkpoint_key
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.settings import SAMPLE_RATE
from narrate.jobs.task.stitcher import EncodePath

CAP = 50 * 10**9  # the caches' cap: nothing is pruned during the benchmark


def stitch(
    plan: Plan,
    store: CheckpointStore,
    spec: JobSpec,
    out: Path,
    work: Path,
    reuse: Reuse,
    unit_s: float = SEGMENT_S,
    block_s: float = BLOCK_S,
) -> dict:
    """The job's stitch (jobs/task/stitcher.py without the queue) of a plan whose every sentence is checkpointed,
    from the planning's verification to the files in place and the record kept."""
    t0 = time.monotonic()
    assert len(plan.checkpointed(store)) == len(plan.sentences)  # as the job's planning does
    t_plan = time.monotonic()
    ffmpeg = ffmpeg_exe()
    seg = Segmenter(
        plan,
        spec,
        int(unit_s * SAMPLE_RATE),
        int(block_s * SAMPLE_RATE),
        follow=reuse.follow.cuts if reuse.follow else None,
    )
    path = EncodePath.choose(out, plan, spec)
    with BookWriter(out, ffmpeg, title="Bench", root=out.parent, workdir=work, wav=path.wav) as book:
        encoders = path.open(book, ffmpeg, plan, spec, store, seg, reuse)
        encoder = encoders.encoder
        try:

            def heard(i: int) -> Heard:
                h = store.header(plan.keys[i])
                assert h is not None
                return Heard(h["samples"], h["frames"], h["runaway"], h["takes"])

            walked, closed = seg.advance(heard)
            encoder.walked(walked, closed, seg.units)
            encoder.drain()
            t_encoded = time.monotonic()
            book.samples, book.chapters = seg.samples, list(seg.chapters)
            stitch_bench._finish(book, spec, seg.cues, out)
        finally:
            encoders.close()
    t_placed = time.monotonic()
    if reuse.cache is not None:
        reuse.cache.save(out.stem, encoder.record(seg))
    t_kept = time.monotonic()
    return {
        "wall_s": t_kept - t0,
        "plan_s": t_plan - t0,
        "measure_encode_s": t_encoded - t_plan,
        "mux_tag_place_s": t_placed - t_encoded,
        "record_s": t_kept - t_placed,
        "segments": len(seg.segments),
        "segments_reused": encoder.reused,
        "sentences_measured": encoder.measured,
        "samples": seg.samples,
        "record": encoder.record(seg),
        "cues": seg.cues,
        "segment_list": seg.segments,
    }


def redone(plan: Plan, store: CheckpointStore, index: int, seconds: float) -> Plan:
    """The plan with sentence `index` read again: a new take (another seed) of another length."""
    rng = np.random.default_rng(index + 1)
    pcm = stitch_bench.speechlike(rng, seconds)
    s = plan.sentences[index]
    key = checkpoint_key(s.text, "bench", "bench", "bf16", s.seed + 1, s.budget)
    store.save(key, pcm, frames=pcm.size // 1920, runaway=False, takes=1)
    keys = list(plan.keys)
    keys[index] = key
    return Plan(plan.sentences, plan.paragraph_end, plan.chapter_at, keys, plan.originals)


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--format", default="m4b")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args()
    load = _load()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        root = Path(tmp)
        t0 = time.monotonic()
        plan, store = stitch_bench.make_book(root, args.hours)
        made_s = time.monotonic() - t0
        spec = JobSpec(document="bench", voice="b" * 64, output=f"book.{args.format}", subtitles="srt,json")
        (root / "out").mkdir()
        fulls, redos = [], []
        for run in range(args.runs):
            cache = SegmentCache(root / f"segments-{run}", CAP)
            fulls.append(
                stitch(
                    plan,
                    store,
                    spec,
                    root / "out" / f"full.{args.format}",
                    root / "s",
                    Reuse(cache, None, fingerprint(plan, spec)),
                )
            )
            print(f"full {run + 1}: {fulls[-1]['wall_s']:.2f} s", file=sys.stderr)
        middle = len(plan.sentences) // 2
        again = redone(plan, store, middle, 5.55)
        kept = SegmentCache(root / "segments-0", CAP)
        for run in range(args.runs):
            cache = SegmentCache(root / f"redo-{run}", CAP)
            shutil.copytree(kept.root, cache.root)
            follow = cache.record("full")
            assert follow is not None
            reuse = Reuse(cache, follow, fingerprint(again, spec))
            redos.append(stitch(again, store, spec, root / "out" / f"redo.{args.format}", root / "s", reuse))
            print(f"redo {run + 1}: {redos[-1]['wall_s']:.2f} s", file=sys.stderr)
        out_mb = (root / "out" / f"full.{args.format}").stat().st_size / 1e6

    def best(rows: list[dict]) -> dict:
        top = min(rows, key=lambda r: r["wall_s"])
        left = ("samples", "record", "cues", "segment_list")
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in top.items() if k not in left}

    report = {
        "date": datetime.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "load_1min_before": load,
        "hours": round(fulls[0]["samples"] / SAMPLE_RATE / 3600, 3),
        "sentences": len(plan.sentences),
        "format": args.format,
        "output_mb": round(out_mb, 1),
        "make_checkpoints_s": round(made_s, 1),
        "redone_sentence": middle + 1,
        "full": best(fulls),
        "redo": best(redos),
        "full_wall_s_runs": [round(r["wall_s"], 2) for r in fulls],
        "redo_wall_s_runs": [round(r["wall_s"], 2) for r in redos],
        "ratio_full_over_redo": round(min(r["wall_s"] for r in fulls) / min(r["wall_s"] for r in redos), 1),
    }
    text = json.dumps(report)
    print(
        f"full stitch {report['full']['wall_s']:.2f} s, redo's stitch {report['redo']['wall_s']:.2f} s "
        f"({report['ratio_full_over_redo']}x); {report['redo']['segments_reused']} of "
        f"{report['redo']['segments']} segments kept"
    )
    print("JSON: " + text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
