"""What the proof pass costs: `narrate run` on the first sentences of a real chapter, without and with
`--proof` (every take heard back by speech recognition and judged), each a whole process with a fresh
home, interleaved, on the tiny random-weight Qwen3-TTS and Qwen3-ASR checkpoints. `--retakes 0` by
default, so that both make the same frames and the difference is the hearing alone (random weights
make every take garbage: every one would be flagged and retaken). Prints the medians and the proof's
added wall time as a share of the run without it (`added_share`, the processes' wall), and the job's added wall
as a share of the synthesis of the job without it (`added_share_of_synthesis`: the job's wall less the model's
load, from the result's timings), also pair by pair (each run with the proof against the run without it just
before: the machine's speed drifts) with their median; writes JSON (with the date).

    .venv/bin/python tests/bench/proof_bench.py [--runs 2] [--sentences 40] [--max-frames 16]
        [--retakes 0] [--model DIR] [--asr DIR] [--json FILE]

Without --model/--asr the tiny checkpoints are built in a temporary folder first."""

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
from datetime import UTC, datetime
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # for helpers/, as tests/conftest.py has it for the tests

from helpers.audio import write_voice  # noqa: E402
from helpers.procs import NARRATE  # noqa: E402

CHAPTER = Path(__file__).resolve().parent / "chapter.txt"


def build(kind: str, out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "narrate.worker.testkit.random_checkpoint", str(out), "--size", "tiny", "--kind", kind],
        check=True,
        capture_output=True,
    )
    return out


def one_run(model: Path, voice: Path, doc: Path, frames: int, proof: Path | None, retakes: int) -> dict:
    home = Path(tempfile.mkdtemp(prefix="npb-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NARRATE_")}
    env.update(
        NARRATE_HOME=str(home),
        NARRATE_OUTPUT_DIR=str(home),
        NARRATE_RUNAWAY_RETRIES="0",
        HF_HUB_OFFLINE="1",
        NARRATE_LOCK_PATH=str(home / "host.lock"),
    )
    args = [
        *NARRATE,
        "run",
        str(doc),
        "--voice",
        str(voice),
        "-o",
        str(home / "out.wav"),
        "--model",
        str(model),
        "--max-frames",
        str(frames),
        "--json",
        "--here",
    ]
    if proof is not None:
        args += ["--proof", str(proof), "--retakes", str(retakes)]
    try:
        t0 = time.perf_counter()
        proc = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
        took = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"narrate run failed: {proc.stderr[-2000:]}")
        result = json.loads(proc.stdout)["result"]
        timings = result["timings"]  # the job's own: its wall, and the model's load within it
        job, model = timings["wall_s"], timings["model_s"]
        return {"wall_s": round(took, 2), "job_s": job, "synthesis_s": job - model, "proof": result.get("proof")}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=40)
    parser.add_argument("--max-frames", type=int, default=16)
    parser.add_argument("--retakes", type=int, default=0)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--asr", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="npbw-", dir="/tmp"))
    try:
        model = args.model or build("base", work / "tts")
        asr = args.asr or build("asr", work / "asr")
        voice = write_voice(work / "voice.wav")
        from narrate.jobs.documents.documents import sentences_of

        text = " ".join(sentences_of(" ".join(CHAPTER.read_text().split()), "en")[: args.sentences])
        doc = work / "chapter.txt"
        doc.write_text(text)
        plain, proofed = [], []
        for _ in range(args.runs):
            plain.append(one_run(model, voice, doc, args.max_frames, None, args.retakes))
            proofed.append(one_run(model, voice, doc, args.max_frames, asr, args.retakes))
        pairs = [round((b["job_s"] - a["job_s"]) / a["synthesis_s"], 3) for a, b in zip(plain, proofed, strict=True)]
        p = statistics.median(r["wall_s"] for r in plain)
        q = statistics.median(r["wall_s"] for r in proofed)
        report = {
            "date": datetime.now(UTC).date().isoformat(),
            "machine": f"{os.cpu_count()} cores",
            "sentences": args.sentences,
            "max_frames": args.max_frames,
            "retakes": args.retakes,
            "runs": args.runs,
            "without_proof_s": [r["wall_s"] for r in plain],
            "with_proof_s": [r["wall_s"] for r in proofed],
            "median_without_s": p,
            "median_with_s": q,
            "added_share": round((q - p) / p, 3),
            "job_without_s": [r["job_s"] for r in plain],
            "job_with_s": [r["job_s"] for r in proofed],
            "added_share_of_synthesis": round(
                (statistics.median(r["job_s"] for r in proofed) - statistics.median(r["job_s"] for r in plain))
                / statistics.median(r["synthesis_s"] for r in plain),
                3,
            ),
            # each run with the proof against the run without it just before (the machine's speed drifts)
            "pair_shares_of_synthesis": pairs,
            "median_pair_share_of_synthesis": statistics.median(pairs),
            "proof": {k: v for k, v in (proofed[-1]["proof"] or {}).items() if not isinstance(v, list | dict)},
        }
        print(json.dumps(report, indent=2))
        if args.json:
            args.json.write_text(json.dumps(report, indent=2) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
