"""Stitch and encode of a long book, the old way and the segmented way, side by side:
``python tests/bench/stitch_bench.py --hours 1 --rate 60`` (a developer's benchmark, outside the
product package; the tests use its helpers too)..

Writes `hours` of synthetic speech-like sentences (3-7 s each: a buzz of a few harmonics of a
100-220 Hz voice with vibrato plus low-passed noise, softly clipped to speech's crest factor and
shaped into 4-6 syllables a second, with the
plan's pauses between sentences; ffmpeg's AAC encoder is several times slower on pure tones than on
speech, so tones would mislead) as real checkpoint files in a temp directory. Then:

- segmented (what jobs do): sentences "arrive" as if synthesized at `rate` x realtime; every
  segment whose sentences have arrived is normalized, rendered and encoded in the background
  (jobs/audio/segment_encoder.py); after the last one the rest are encoded in parallel, muxed, tagged
  and copied into place (m4b, m4a: AAC segments; mp3: MP3 segments, jobs/audio/mp3frames.py). With
  `--format ogg|opus|flac` the segments are piped in order into the book's one ffmpeg instead
  (jobs/audio/stream_encode.py), which is then ended, tagged and copied;
- old: after the last sentence, one loudness pass over the whole book, one WAV, one encode, tags,
  the copy (the stitch before segments).

It prints, for each, the tail (the last sentence -> the output in place), CPU seconds (this process
and its ffmpeg children), peak RSS of this process and of the ffmpeg children (sampled),
and the ratios, then the same as JSON. Not part of the test suite at this size (~170 MB of
checkpoints an hour of audio); tests/system/test_segmented_encode.py runs a minute of it."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.signal
from narrate.jobs.audio import assemble, subtitles
from narrate.jobs.audio.segments import BLOCK_S, SEGMENT_S, Heard, Segmenter
from narrate.jobs.book.checkpoints import CheckpointStore, checkpoint_key
from narrate.jobs.book.plan import Plan
from narrate.jobs.book.spec import JobSpec
from narrate.jobs.book.synthesis import Sentence
from narrate.jobs.ffmpeg import ffmpeg_exe
from narrate.jobs.settings import SAMPLE_RATE

if TYPE_CHECKING:
    from narrate.jobs.audio.book_writer import BookWriter

PER_CHAPTER = 200


def speechlike(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """A sentence-long burst of something the AAC encoder treats like speech (float32, peak < 0.5)."""
    n = int(seconds * SAMPLE_RATE)
    t = np.arange(n) / SAMPLE_RATE
    f0 = rng.uniform(100, 220) * (1 + 0.03 * np.sin(2 * np.pi * 5 * t))
    phase = 2 * np.pi * np.cumsum(f0) / SAMPLE_RATE
    buzz = sum(np.sin(k * phase) / k for k in range(1, 6))
    noise = scipy.signal.lfilter([0.3], [1, -0.7], rng.standard_normal(n))
    rate = rng.uniform(4, 6)
    syllables = np.clip(np.sin(np.pi * rate * t), 0, None) ** 0.7
    x: np.ndarray = np.tanh(2.5 * (0.5 * buzz + noise) / np.abs(0.5 * buzz + noise).max()) * syllables  # crest factor
    return (x * rng.uniform(0.15, 0.45)).astype(np.float32)


def make_book(root: Path, hours: float, seed: int = 0, per_chapter: int = PER_CHAPTER) -> tuple[Plan, CheckpointStore]:
    store = CheckpointStore(root / "checkpoints")
    rng = np.random.default_rng(seed)
    sentences, keys, chapters, total, n = [], [], {}, 0, 0
    while total < hours * 3600 * SAMPLE_RATE:
        pcm = speechlike(rng, rng.uniform(3, 7))
        text = f"Sentence {n} of the long book."
        key = checkpoint_key(text, "bench", "bench", "bf16", n, 2048)
        store.save(key, pcm, frames=pcm.size // 1920, runaway=False, takes=1)
        sentences.append(Sentence(n, text, n, 2048))
        keys.append(key)
        if n % per_chapter == 0:
            chapters[n] = f"Chapter {n // per_chapter + 1}"
        total += pcm.size + SAMPLE_RATE // 4
        n += 1
    paragraph_end = frozenset(i for i in range(n) if i % 5 == 4)
    return Plan(sentences, paragraph_end, chapters, keys, [s.text for s in sentences]), store


class PeakRss:
    """Peak RSS (MB) of this process and of its ffmpeg children (together), sampled every 0.2 s."""

    def __init__(self) -> None:
        self.python = self.ffmpeg = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(0.2):
            kids = 0.0
            for pid, ppid, rss, name in _processes():
                if pid == me:
                    self.python = max(self.python, rss)
                elif ppid == me and "ffmpeg" in name:
                    kids += rss
            self.ffmpeg = max(self.ffmpeg, kids)


def _processes() -> list[tuple[int, int, float, str]]:
    """(pid, parent pid, RSS in MB, name) of every process: /proc where there is one (no child
    process to count), else `ps`."""
    if not os.path.isdir("/proc/self"):
        out = subprocess.run(["ps", "-A", "-o", "pid=,ppid=,rss=,comm="], capture_output=True, text=True).stdout
        rows = [line.split(None, 3) for line in out.splitlines()]
        return [(int(r[0]), int(r[1]), int(r[2]) / 1024, r[3]) for r in rows if len(r) == 4]
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        rss = int(fields.get("VmRSS", "0 kB").split()[0]) / 1024
        found.append((int(entry), int(fields["PPid"]), rss, fields["Name"].strip()))
    return found


def _cpu() -> tuple[float, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def _heard(store: CheckpointStore, key: str) -> Heard:
    h = store.header(key)
    assert h is not None
    return Heard(h["samples"], h["frames"], h["runaway"], h["takes"])


def segmented(
    plan: Plan,
    store: CheckpointStore,
    spec: JobSpec,
    out: Path,
    work: Path,
    rate: float | None,
    unit_s: float = SEGMENT_S,
    block_s: float = BLOCK_S,
) -> dict:
    """The job's path (jobs/task/stitcher.py without the queue): returns what happened."""
    from narrate.jobs.audio.book_writer import BookWriter
    from narrate.jobs.task.stitcher import EncodePath

    ffmpeg = ffmpeg_exe()
    seg = Segmenter(plan, spec, int(unit_s * SAMPLE_RATE), int(block_s * SAMPLE_RATE))
    path = EncodePath.choose(out, plan, spec)
    with BookWriter(out, ffmpeg, title="Bench", root=out.parent, workdir=work, wav=path.wav) as book:
        encoders = path.open(book, ffmpeg, plan, spec, store, seg)
        encoder = encoders.encoder
        try:
            t0, arrived, audio = time.monotonic(), 0, 0
            while arrived < len(plan.sentences):  # sentences arrive at `rate` x realtime
                h = _heard(store, plan.keys[arrived])
                audio += h.samples + seg.pause(arrived)
                if rate:
                    time.sleep(max(0.0, t0 + audio / SAMPLE_RATE / rate - time.monotonic()))
                arrived += 1

                def heard(i: int, n: int = arrived) -> Heard | None:
                    return _heard(store, plan.keys[i]) if i < n else None

                walked, closed = seg.advance(heard)
                encoder.walked(walked, closed, seg.units)
            t_last = time.monotonic()
            encoder.drain()
            book.samples, book.chapters = seg.samples, list(seg.chapters)
            _finish(book, spec, seg.cues, out)
        finally:
            encoders.close()
    return {
        "tail_s": time.monotonic() - t_last,
        "segments": seg.segments,
        "units": seg.units,
        "early": encoder.early,
        "samples": seg.samples,
        "cues": seg.cues,
        "chapters": seg.chapters,
        "events": encoder.events,
    }


def old(plan: Plan, store: CheckpointStore, spec: JobSpec, out: Path, work: Path) -> dict:
    """One loudness pass, one WAV, one encode, all after the last sentence."""
    from narrate.jobs.audio.book_writer import BookWriter

    t0 = time.monotonic()
    stream = assemble.Sentences(plan, spec, store)
    gains = assemble.sentence_gains(spec, stream)
    with BookWriter(out, ffmpeg_exe(), title="Bench", root=out.parent, workdir=work) as book:
        cues = assemble.write_book(book, stream, gains, lambda _i: None)
        _finish(book, spec, cues, out)
    return {"tail_s": time.monotonic() - t0, "samples": book.samples}


def _finish(book: BookWriter, spec: JobSpec, cues: list, out: Path) -> None:
    book.split, book.max_part_samples = spec.split, assemble.max_part_samples(spec)
    book.tags = assemble.tags_for(spec, "Bench", assemble.BookMeta(author="Bench"), None)
    spans = book.chapter_spans()
    cues = subtitles.with_chapters(cues, spans)
    for fmt in ("srt", "json"):
        book.add_text(f"{out.stem}.{fmt}", subtitles.render(fmt, cues, SAMPLE_RATE, out.name, book.samples, spans))
    book.finish()


def measured(run: Callable[[], dict]) -> dict:
    cpu0, kids0 = _cpu()
    with PeakRss() as rss:
        got = run()
    cpu1, kids1 = _cpu()
    got.update(cpu_python_s=cpu1 - cpu0, cpu_ffmpeg_s=kids1 - kids0, rss_python_mb=rss.python, rss_ffmpeg_mb=rss.ffmpeg)
    return got


def _total_cpu(got: dict) -> float:
    total: float = got["cpu_python_s"] + got["cpu_ffmpeg_s"]
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--rate", type=float, default=60.0, help="simulated synthesis speed, x realtime (0: at once)")
    ap.add_argument("--format", default="m4b")
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        root = Path(tmp)
        t0 = time.monotonic()
        plan, store = make_book(root, args.hours)
        made_s = time.monotonic() - t0
        spec = JobSpec(document="bench", voice="b" * 64, output=f"book.{args.format}", subtitles="srt,json")
        new = measured(
            lambda: segmented(plan, store, spec, root / "out" / f"new.{args.format}", root / "s1", args.rate)
        )
        was = measured(lambda: old(plan, store, spec, root / "out" / f"old.{args.format}", root / "s2"))
        keep = ("tail_s", "cpu_python_s", "cpu_ffmpeg_s", "rss_python_mb", "rss_ffmpeg_mb")
        report = {
            "hours": round(new["samples"] / SAMPLE_RATE / 3600, 3),
            "sentences": len(plan.sentences),
            "units": len(new["units"]),
            "segments": len(new["segments"]),
            "segments_encoded_before_the_last_sentence": new["early"],
            "rate_x_realtime": args.rate,
            "make_checkpoints_s": round(made_s, 1),
            "segmented": {k: round(new[k], 2) for k in keep},
            "old": {k: round(was[k], 2) for k in keep},
            "tail_ratio_old_over_segmented": round(was["tail_s"] / max(new["tail_s"], 1e-9), 1),
            "cpu_ratio_segmented_over_old": round(_total_cpu(new) / max(_total_cpu(was), 1e-9), 2),
            "output_mb": round((root / "out" / f"new.{args.format}").stat().st_size / 1e6, 1),
        }
        print(
            f"tail (last sentence -> output in place): old {was['tail_s']:.1f} s, segmented {new['tail_s']:.1f} s "
            f"({report['tail_ratio_old_over_segmented']}x shorter); total CPU segmented/old "
            f"{report['cpu_ratio_segmented_over_old']}"
        )
        print("JSON: " + json.dumps(report))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
