"""End to end: the time a user waits for a chapter, from the command to the encoded file. `narrate run` on a
real chapter of prose against the plain mlx-audio loop doing the same frames, each a whole process (imports,
model load, compiling and warm-up, synthesis, stitch and encode, exit), several runs each, interleaved.
Prints the medians, spreads and the ratio plain/narrate, and where narrate's time goes; writes JSON.

    .venv/bin/python tests/bench/e2e_bench.py [--runs 3] [--busy] [--max-frames 16] [--model DIR]
        [--chapter FILE] [--voice SAMPLE] [--format mp3] [--batch-size N] [--redis-url URL]
        [--baseline TREE] [--baseline-blas CHOICE] [--plain-blas bundled|openblas] [--json FILE]

- narrate: `narrate run CHAPTER --voice SAMPLE -o OUT --max-frames N --json` with a fresh NARRATE_HOME
  each run (so its embedded Valkey server starts, the voice's x-vector is computed once and no sentence
  is reused: a first run), NARRATE_RUNAWAY_RETRIES=0 (random weights never emit EOS: every sentence runs
  to its budget and is not synthesized again), run through e2e_probe.py, which times its phases;
- plain: e2e_plain.py, mlx-audio's `generate` per sentence in reading order with the sentence's spoken
  text, language, seed and frame budget from narrate's own planning (jobs.book.plan), EOS disabled as
  `narrate bench` disables it, the audio concatenated and encoded by one ffmpeg to the same format.

Both make the same frames (checked: narrate's result and plain's count against the plan's budgets).
`--baseline TREE` times a second narrate in the same interleaving, imported from TREE/narrate (a folder
holding cli/, jobs/ and worker/ of another checkout, e.g. links into a `git worktree` of the commit
before a change): before and after, measured under the same load; `--baseline-blas CHOICE` gives the
baseline its own NARRATE_BLAS (alone, without --baseline: this tree's narrate again, with that BLAS).
`--busy` runs a CPU-bound process (a Python busy loop) beside them for the whole measurement. The
chapter (tests/bench/chapter.txt) is chapter 6 of Pride and Prejudice (Jane Austen, 1813, public domain;
the Project Gutenberg text of the 1894 George Allen edition, #1342, its illustration captions and
italics marks left out), 2,342 words in 84 sentences; `--max-frames` caps every budget so a CPU run
takes minutes (every sentence reaches 16). MLX keeps compiled CPU kernels on disk between processes (in
its temp folder): a first ever run pays more.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CHAPTER = HERE / "chapter.txt"
VOICE = REPO / "examples" / "voice.wav"


def plan_sentences(chapter: Path, max_frames: int, seed: int) -> list[dict]:
    """The chapter's sentences as `narrate run` plans them (one voice): spoken text, language, seed, budget."""
    from narrate.jobs.book.plan import sentence_seed, spoken_paragraphs
    from narrate.jobs.documents.budgets import frame_budget
    from narrate.jobs.documents.languages import tts_name
    from narrate.jobs.documents.readers import read_any

    doc = read_any(chapter)
    out = []
    for p, para in enumerate(spoken_paragraphs(doc)):
        for text in para:
            out.append(
                {
                    "text": text,
                    "language": tts_name(doc.language_of(p)),
                    "seed": sentence_seed(seed, text),
                    "budget": frame_budget(text, max_frames),
                }
            )
    return out


def timed(cmd: list[str], env: dict, log: Path) -> tuple[float, float, str]:
    """Run `cmd` to its end: (wall seconds, CPU seconds of it and its children, stdout)."""
    with open(log, "w") as err:
        t = time.monotonic()
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        out = p.stdout.read() if p.stdout else ""
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit(f"{cmd[1]} failed ({p.returncode}); see {log}:\n{log.read_text()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, out


def run_narrate(
    a: argparse.Namespace, work: Path, tag: str, budgets: list[int], tree: Path | None, blas: str | None = None
) -> dict:
    home = work / f"home-{tag}"
    home.mkdir()
    out = work / f"{tag}.{a.format}"
    probe = work / f"probe-{tag}.json"
    env = dict(
        os.environ,
        NARRATE_HOME=str(home),
        NARRATE_MODEL=str(a.model),
        NARRATE_RUNAWAY_RETRIES="0",
        E2E_PROBE_OUT=str(probe),
        PYTHONUNBUFFERED="1",
    )
    env.pop("NARRATE_REDIS_URL", None)
    if blas is not None:
        env["NARRATE_BLAS"] = blas
    if tree is not None:  # its narrate package first on the path
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
    if a.redis_url:
        import redis

        redis.Redis.from_url(a.redis_url).flushdb()
        env["NARRATE_REDIS_URL"] = a.redis_url
    if a.batch_size:
        env["NARRATE_BATCH_SIZE"] = str(a.batch_size)
    cmd = [
        sys.executable,
        str(HERE / "e2e_probe.py"),
        "run",
        str(a.chapter),
        "--voice",
        str(a.voice),
        "-o",
        str(out),
        "--max-frames",
        str(a.max_frames),
        "--json",
    ]
    t_spawn = time.time()
    wall, cpu, stdout = timed(cmd, env, work / f"{tag}.log")
    result = json.loads(stdout.strip().splitlines()[-1])["result"]
    assert result["frames"] == budgets, "narrate made other frames than the plan's budgets"
    shutil.rmtree(home, ignore_errors=True)
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "timings": result["timings"],
        "breakdown": breakdown(json.loads(probe.read_text()), t_spawn, wall),
    }


def breakdown(p: dict, t_spawn: float, wall: float) -> dict:
    """Where narrate's process spent its wall time (seconds), in order; the parts down to `exit` add up
    to the wall time, the rest are figures within them."""
    s = p["spans"]
    start = p["t0"] - t_spawn  # the interpreter until the probe's first line

    def begin(k: str) -> float:
        return s[k]["start"]

    def end(k: str) -> float:
        return s[k]["end"]

    job = {k: s[k]["seconds"] for k in ("model_load", "plan", "voice", "synthesis", "stitch_tail")}
    parts = {
        "interpreter": start,
        "imports_and_options": begin("prepare"),  # the CLI's and the worker side's imports, options, voices
        "prepare": s["prepare"]["seconds"],  # the document read, cleaned, its language detected; the sample read
        "server_start": end("server_start") - end("prepare"),  # the embedded Valkey started, connected
        "submit": end("submit") - end("server_start"),
        "worker_setup": begin("job") - end("submit"),  # host lock, the rq worker, taking the job
        **job,
        "job_other": end("job") - begin("job") - sum(job.values()),  # meta, checkpoints' planning, cache trim
        "after_job": end("in_process") - end("job"),  # status read, private queue removed, server stopped
        "exit": wall - start - end("in_process"),  # the status printed, interpreter teardown
        "first_audio": start + begin("chunks"),
        "imports_total": p["imports"]["s"],
        "model_load_imports": s["model_load"]["imports"],
        "redis_commands": p["redis"]["commands"] + p["redis"]["pipelines"],
        "redis_s": p["redis"]["s"],
    }
    return {k: round(v, 3) for k, v in parts.items()}


def run_plain(a: argparse.Namespace, work: Path, tag: str, plan: Path, budgets: list[int]) -> dict:
    from narrate.jobs.ffmpeg import ffmpeg_exe

    out = work / f"{tag}.{a.format}"
    cmd = [
        sys.executable,
        str(HERE / "e2e_plain.py"),
        "--model",
        str(a.model),
        "--voice",
        str(a.voice),
        "--plan",
        str(plan),
        "-o",
        str(out),
        "--ffmpeg",
        ffmpeg_exe(os.environ.get("NARRATE_FFMPEG")),
        *(["--openblas"] if a.plain_blas == "openblas" else []),
    ]
    wall, cpu, stdout = timed(cmd, dict(os.environ, PYTHONUNBUFFERED="1"), work / f"{tag}.log")
    phases = json.loads(stdout.strip().splitlines()[-1])
    assert phases.pop("frames") == budgets, "the plain loop made other frames than the plan's budgets"
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "phases": phases}


def stats(values: list[float]) -> dict:
    med = statistics.median(values)
    return {
        "median": round(med, 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "spread_pct": round(100 * (max(values) - min(values)) / med, 1) if med else 0.0,
    }


def medians(rows: list[dict]) -> dict:
    return {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]}


BUSY = "# tests/bench/e2e_bench.py --busy: a CPU-bound neighbour for the measurement\nwhile True:\n    pass\n"


def busy_process() -> subprocess.Popen:
    """A Python busy loop in a session of its own (what it is shows in `ps`; a kill of it spares the bench)."""
    return subprocess.Popen([sys.executable, "-c", BUSY], start_new_session=True)


def ensure_model(a: argparse.Namespace, work: Path) -> None:
    if a.model is None:
        a.model = work / "tiny-checkpoint"
        subprocess.run(
            [sys.executable, "-m", "narrate.worker.testkit.random_checkpoint", str(a.model)],
            check=True,
            stdout=subprocess.DEVNULL,
        )


def measure(
    a: argparse.Namespace, work: Path, plan: Path, budgets: list[int], busy: subprocess.Popen | None
) -> dict[str, list[dict]]:
    """Every variant `a.runs` times, interleaved, each run starting with the next variant: a drifting
    load hits all alike."""
    variants = ["narrate", *(["baseline"] if a.baseline or a.baseline_blas else []), "plain"]
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    for i in range(a.runs):
        for which in variants[i % len(variants) :] + variants[: i % len(variants)]:
            load = os.getloadavg()[0]
            tag = f"{which}-{i}"
            if which == "plain":
                r = run_plain(a, work, tag, plan, budgets)
            else:
                r = run_narrate(
                    a,
                    work,
                    tag,
                    budgets,
                    a.baseline if which == "baseline" else None,
                    a.baseline_blas if which == "baseline" else None,
                )
            if busy is not None and busy.poll() is not None:
                raise SystemExit(
                    f"the busy neighbour ended (exit status {busy.returncode}) during {tag}: measure again"
                )
            r["load_before"] = round(load, 2)
            runs[which].append(r)
            print(
                f"run {i + 1} {which:8s} {r['wall_s']:8.2f} s wall {r['cpu_s']:8.2f} s CPU "
                f"(load average before: {load:.2f})",
                flush=True,
            )
    return runs


def report(a: argparse.Namespace, budgets: list[int], runs: dict[str, list[dict]]) -> dict:
    plain = runs["plain"]
    p = stats([r["wall_s"] for r in plain])
    frames = sum(budgets)
    fig: dict = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpus": os.cpu_count(),
        "busy": a.busy,
        "runs": a.runs,
        "chapter": a.chapter.name,
        "words": len(a.chapter.read_text(encoding="utf-8").split()),
        "sentences": len(budgets),
        "max_frames": a.max_frames,
        "frames": frames,
        "audio_s": frames / 12.5,
        "format": a.format,
        "batch_size": a.batch_size,
        "redis": "external" if a.redis_url else "embedded",
        "baseline": str(a.baseline) if a.baseline else None,
        "plain_blas": a.plain_blas,
        "baseline_blas": a.baseline_blas,
        "narrate_blas": os.environ.get("NARRATE_BLAS") or "auto",
        "plain_wall_s": p,
        "plain_cpu_s": stats([r["cpu_s"] for r in plain]),
        "plain_phases_median_s": medians([r["phases"] for r in plain]),
    }
    print(
        f"\n{fig['sentences']} sentences, {frames} frames ({frames / 12.5:.0f} s of audio), {a.format}, "
        f"{'with a busy process beside' if a.busy else 'nothing else of ours running'}; the plain loop's BLAS: "
        f"{a.plain_blas}, narrate's: NARRATE_BLAS={fig['narrate_blas']}"
    )
    print(f"plain     median {p['median']:8.2f} s  (min {p['min']:.2f}, max {p['max']:.2f}, spread {p['spread_pct']}%)")
    for name in [v for v in runs if v != "plain"]:
        n = stats([r["wall_s"] for r in runs[name]])
        fig[name] = {
            "wall_s": n,
            "cpu_s": stats([r["cpu_s"] for r in runs[name]]),
            "ratio_plain_over_it": round(p["median"] / n["median"], 2),
            "ratio_per_run": [round(q["wall_s"] / r["wall_s"], 2) for q, r in zip(plain, runs[name], strict=True)],
            "breakdown_median_s": medians([r["breakdown"] for r in runs[name]]),
        }
        print(
            f"{name:9s} median {n['median']:8.2f} s  (min {n['min']:.2f}, max {n['max']:.2f}, "
            f"spread {n['spread_pct']}%); plain/{name}: {fig[name]['ratio_plain_over_it']}x "
            f"(per run: {fig[name]['ratio_per_run']})"
        )
    names = [v for v in runs if v != "plain"]
    print("where narrate's time goes, medians (s): " + " / ".join(names))
    for k in fig[names[0]]["breakdown_median_s"]:
        print(f"  {k:22s} " + " ".join(f"{fig[v]['breakdown_median_s'][k]:9.3f}" for v in names))
    print("plain's phases, medians (s): " + ", ".join(f"{k} {v}" for k, v in fig["plain_phases_median_s"].items()))
    print(json.dumps(fig))
    fig["runs_each"] = runs
    return fig


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--busy", action="store_true", help="a CPU-bound process beside both, the whole time")
    ap.add_argument("--max-frames", type=int, default=16, help="cap on each sentence's frame budget")
    ap.add_argument("--model", type=Path, default=None, help="checkpoint dir (default: a tiny random one)")
    ap.add_argument("--chapter", type=Path, default=CHAPTER)
    ap.add_argument("--voice", type=Path, default=VOICE)
    ap.add_argument("--format", default="mp3", choices=["mp3", "m4b", "flac", "opus", "wav"])
    ap.add_argument("--batch-size", type=int, default=None, help="NARRATE_BATCH_SIZE (default: by device)")
    ap.add_argument("--redis-url", default=None, help="a Redis for narrate (default: its embedded server)")
    ap.add_argument("--baseline", type=Path, default=None, help="also time the narrate of TREE/narrate")
    ap.add_argument("--baseline-blas", default=None, help="NARRATE_BLAS for the baseline (alone: this tree's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--plain-blas",
        choices=["bundled", "openblas"],
        default="bundled",
        help="the plain loop's BLAS: MLX's bundled one (a script as installed) or the system OpenBLAS "
        "narrate loads on Linux (narrate.worker.blas)",
    )
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    from narrate.jobs.outputs.outputs import FORMATS

    work = Path(tempfile.mkdtemp(prefix="e2e-bench-", dir="/tmp"))
    busy = None
    try:
        ensure_model(a, work)
        sentences = plan_sentences(a.chapter, a.max_frames, a.seed)
        budgets = [s["budget"] for s in sentences]
        plan = work / "plan.json"
        plan.write_text(json.dumps({"sentences": sentences, "format": FORMATS[f".{a.format}"]}))
        busy = busy_process() if a.busy else None
        runs = measure(a, work, plan, budgets, busy)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
        shutil.rmtree(work, ignore_errors=True)
    fig = report(a, budgets, runs)
    if a.json:
        a.json.write_text(json.dumps(fig, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
