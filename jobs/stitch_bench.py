"""Memory and time of stitching a long book: ``python -m narrate.jobs.stitch_bench --hours 10``.

Writes `hours` of synthetic sentences (tones of 3-7 s) as real checkpoint files in a temp
directory, then runs the job's real stitch (loudness measurement, fades, pauses, subtitles, one
m4b encode, tags, the confined copy into place) and prints the peak RSS of this process and of
the ffmpeg child, and the wall time of each step. Not part of the test suite (minutes, ~4 GB of
disk for 10 h)."""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import assemble, subtitles
from .checkpoints import CheckpointStore, checkpoint_key
from .ffmpeg import ffmpeg_exe
from .plan import Plan
from .settings import SAMPLE_RATE
from .spec import JobSpec
from .synthesis import Sentence


def _rss_mb(who: int) -> float:
    peak = resource.getrusage(who).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux


def make_book(root: Path, hours: float) -> tuple[Plan, CheckpointStore]:
    store = CheckpointStore(root / "checkpoints")
    rng = np.random.default_rng(0)
    sentences, keys, chapters, total, n = [], [], {}, 0, 0
    while total < hours * 3600 * SAMPLE_RATE:
        length = int(rng.uniform(3, 7) * SAMPLE_RATE)
        t = np.arange(length) / SAMPLE_RATE
        pcm = (0.1 + 0.2 * rng.random()) * np.sin(2 * np.pi * rng.uniform(110, 600) * t)
        text = f"Sentence {n} of the long book."
        key = checkpoint_key(text, "bench", "bench", "bf16", n, 2048)
        store.save(key, pcm.astype(np.float32), frames=length // 1920, runaway=False, takes=1)
        sentences.append(Sentence(n, text, n, 2048))
        keys.append(key)
        if n % 200 == 0:
            chapters[n] = f"Chapter {n // 200 + 1}"
        total += length + SAMPLE_RATE // 4
        n += 1
    paragraph_end = frozenset(i for i in range(n) if i % 5 == 4)
    return Plan(sentences, paragraph_end, chapters, keys, [s.text for s in sentences]), store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=10.0)
    ap.add_argument("--format", default="m4b")
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    from .stitch import BookWriter

    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        root = Path(tmp)
        t0 = time.monotonic()
        plan, store = make_book(root, args.hours)
        t1 = time.monotonic()
        rss_made = _rss_mb(resource.RUSAGE_SELF)
        spec = JobSpec(document="bench", voice="bench", output=f"book.{args.format}", subtitles="srt,json")
        stream = assemble.Sentences(plan, spec, store)
        gains = assemble.sentence_gains(spec, stream)
        t2 = time.monotonic()
        out = root / "out" / f"book.{args.format}"
        with BookWriter(out, ffmpeg_exe(), title="Bench", root=root / "out", workdir=root / "stitch") as book:
            book.tags = assemble.tags_for(spec, "Bench", assemble.BookMeta(author="Bench"), None)
            cues = assemble.write_book(book, stream, gains, lambda _i: None)
            t3 = time.monotonic()
            spans = book.chapter_spans()
            cues = subtitles.with_chapters(cues, spans)
            for fmt in ("srt", "json"):
                book.add_text(f"book.{fmt}", subtitles.render(fmt, cues, SAMPLE_RATE, out.name, book.samples, spans))
            book.finish()
        t4 = time.monotonic()
        report = {
            "hours": round(book.samples / SAMPLE_RATE / 3600, 3),
            "sentences": len(plan.sentences),
            "chapters": len(spans),
            "output_mb": round(out.stat().st_size / 1e6, 1),
            "make_checkpoints_s": round(t1 - t0, 1),
            "loudness_pass_s": round(t2 - t1, 1),
            "write_wav_s": round(t3 - t2, 1),
            "encode_tag_place_s": round(t4 - t3, 1),
            "stitch_total_s": round(t4 - t1, 1),
            "peak_rss_mb_after_making_checkpoints": round(rss_made, 1),
            "peak_rss_mb_python": round(_rss_mb(resource.RUSAGE_SELF), 1),
            "peak_rss_mb_ffmpeg": round(_rss_mb(resource.RUSAGE_CHILDREN), 1),
        }
        print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
