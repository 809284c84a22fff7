"""bfloat16 against float32 for the talker and code predictor on a CPU (`--quant float32`), with the system
OpenBLAS and with MLX's bundled BLAS: narrate's synthesis of the same sentences both ways, side by side in
one process, and how far apart their outputs are.

    .venv/bin/python tests/bench/dtype_bench.py [--size tiny|0.6b|1.7b | --model DIR] [--runs 3]
        [--sentences 24] [--frames 16] [--batch-size 8] [--blas auto,bundled] [--codes-only] [--json FILE]

For each BLAS (`auto`: the system OpenBLAS where narrate.worker finds one; `bundled`: MLX's own reference
BLAS, as on a machine without it) one process (MLX picks its BLAS when it is loaded, so a BLAS is a
process) loads the checkpoint twice, as `--quant bf16` and as `--quant float32` (the talker and code
predictor upcast once), synthesizes the first sentences of tests/bench/chapter.txt through narrate's
engine (continuous batching, the codec on its thread, EOS never sampled: every sentence runs to its
budget, capped by --frames), once unmeasured each, then `--runs` times each, alternating which goes first.
Reported per BLAS and dtype: the medians of frames/s, audio seconds per wall second and CPU seconds per
frame (the process's, both cores), their spreads, the ratio float32/bf16 per run and of the medians, and
the talker KV cache's dtype seen while it ran. `--codes-only` leaves the codec out (each chunk's audio
is silence, nothing decoded): the talker, code predictor and sampling alone, for the 0.6B and 1.7B
shapes, whose codec takes seconds a frame on a CPU.

The outputs of the two dtypes, same seeds: how many sentences have the same codes, the share of frames
(all 16 codes) and of codes that agree, the median frame where a sentence's codes first differ, and for
the audio how many sentences are bit-identical (what the tests call equal), the largest sample difference
and the difference's RMS against the bf16 audio's (dB). Across the BLAS libraries: whether each dtype's
codes are the same with OpenBLAS and without. Prints a table and one JSON line (`--json FILE` keeps it).
Absolute times on a shared machine drift: compare within a run (ratios, medians of alternated runs).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
VOICE = REPO / "examples" / "voice.wav"
DTYPES = ("bf16", "float32")
FPS = 12.5  # codec frames a second of audio


def stats(values: list[float]) -> dict:
    med = statistics.median(values)
    return {
        "median": round(med, 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
        "spread_pct": round(100 * (max(values) - min(values)) / med, 1) if med else 0.0,
    }


# ---- the child: one BLAS, both dtypes, in this process -------------------------------------------------


def child(a: argparse.Namespace) -> int:
    importlib.import_module("narrate.worker")  # the system OpenBLAS ahead of MLX's (NARRATE_BLAS=auto), before mlx
    import mlx.core as mx
    import numpy as np
    from narrate.jobs.audio.samples import read_voice, voice_samples
    from narrate.jobs.book.synthesis import Sentence
    from narrate.jobs.ffmpeg import ffmpeg_exe
    from narrate.worker import blas
    from narrate.worker.engine import decode_loop
    from narrate.worker.engine.codec_stream import CodecWorker
    from narrate.worker.engine.mlx_engine import MlxEngine
    from narrate.worker.engine.models import load, resolve
    from narrate.worker.engine.voice_cache import speaker_embedding

    plan = json.loads(a.plan.read_text())
    sentences = [Sentence(i, s["text"], s["seed"], s["budget"], s["language"]) for i, s in enumerate(plan)]
    frames_total = sum(s.budget for s in sentences)
    samples = mx.array(voice_samples(read_voice(a.voice, ffmpeg_exe()).wav))
    engines, voices = {}, {}
    for dtype in DTYPES:
        loaded = load(resolve(str(a.model), dtype))
        tc = loaded.model.config.talker_config
        tc.codec_eos_token_id = tc.vocab_size  # EOS never sampled: every sentence runs to its budget
        engines[dtype] = MlxEngine(loaded, batch_size=a.batch_size, runaway_retries=0)
        voices[dtype] = speaker_embedding(loaded, samples)

    codes: dict[int, list[np.ndarray]] = {}
    kv_seen: set[str] = set()
    emit = decode_loop.DecodeLoop._emit

    def recording_emit(loop: Any, row: Any) -> None:  # each row's codes as the loop hands them to the codec
        fresh = list(row.fresh)
        if loop.state is not None:
            kv_seen.add(str(loop.state.cache[0].keys.dtype).removeprefix("mlx.core."))
        emit(loop, row)
        if fresh and not row.fresh:  # sent to the codec
            codes.setdefault(row.index, []).extend(fresh)

    decode_loop.DecodeLoop._emit = recording_emit
    if a.codes_only:
        from concurrent.futures import Future

        def silence(self: Any, row: Any, fresh: list) -> Future:
            f: Future = Future()
            f.set_result(np.zeros(0, np.float32))
            return f

        CodecWorker.submit = silence  # type: ignore[method-assign]

    def synthesize(dtype: str) -> tuple[dict, dict, dict]:
        codes.clear()
        kv_seen.clear()
        pcm: dict[int, list] = {}
        c0, t0 = time.process_time(), time.perf_counter()
        for chunk in engines[dtype].batched(sentences, voices[dtype], a.batch_size):
            pcm.setdefault(chunk.index, []).append(chunk.pcm)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        made = sum(len(v) for v in codes.values())
        assert made == frames_total, f"{dtype} made {made} frames, the plan {frames_total}"
        fig = {
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "frames_per_s": round(made / wall, 3),
            "audio_s_per_s": round(made / FPS / wall, 3),
            "cpu_ms_per_frame": round(1000 * cpu / made, 2),
            "kv_dtype": sorted(kv_seen),
        }
        audio = {i: np.concatenate(v) for i, v in pcm.items()}
        return fig, {i: np.stack(v) for i, v in codes.items()}, audio

    out: dict = {"blas": blas.in_use(), "runs": {d: [] for d in DTYPES}}
    last: dict[str, tuple[dict, dict]] = {}
    for dtype in DTYPES:  # warm: every row count's compiled step, MLX's kernels
        synthesize(dtype)
    for i in range(a.runs):
        for dtype in DTYPES if i % 2 == 0 else DTYPES[::-1]:
            fig, got_codes, got_audio = synthesize(dtype)
            out["runs"][dtype].append(fig)
            last[dtype] = (got_codes, got_audio)
            print(
                f"  {a.child:8s} run {i + 1} {dtype:8s} {fig['frames_per_s']:8.2f} frames/s "
                f"{fig['cpu_ms_per_frame']:7.2f} CPU ms/frame",
                file=sys.stderr,
                flush=True,
            )
    out["difference"] = difference(last["bf16"], last["float32"], a.codes_only)
    np.savez(a.codes_out, **{f"{d}_{i}": c for d in DTYPES for i, c in last[d][0].items()})
    print(json.dumps(out), flush=True)
    os._exit(0)  # MLX's stream threads (a codec thread's per synthesis) would abort an ordinary exit


def difference(ref: tuple[dict, dict], other: tuple[dict, dict], codes_only: bool) -> dict:
    """How far `other` (float32) is from `ref` (bf16): their codes, and their audio unless codes only."""
    import numpy as np

    (rc, ra), (oc, oa) = ref, other
    same_sentences = sum(bool(np.array_equal(rc[i], oc[i])) for i in rc)
    frames = sum(len(rc[i]) for i in rc)
    same_frames = sum(int(np.all(rc[i] == oc[i], axis=1).sum()) for i in rc)
    same_codes = sum(int((rc[i] == oc[i]).sum()) for i in rc)
    first = [int(np.argmax(~np.all(rc[i] == oc[i], axis=1))) for i in rc if not np.array_equal(rc[i], oc[i])]
    out: dict = {
        "sentences": len(rc),
        "codes_same_sentences": same_sentences,
        "frames_same_pct": round(100 * same_frames / frames, 1),
        "codes_same_pct": round(100 * same_codes / rc[next(iter(rc))].shape[1] / frames, 1),
        "first_codebook_same_pct": round(100 * sum(int((rc[i][:, 0] == oc[i][:, 0]).sum()) for i in rc) / frames, 1),
        "first_differing_frame_median": statistics.median(first) if first else None,
    }
    if not codes_only:
        diff = [np.abs(ra[i] - oa[i]) for i in ra]
        ref_rms = float(np.sqrt(np.mean(np.concatenate(list(ra.values())) ** 2)))
        diff_rms = float(np.sqrt(np.mean(np.concatenate(diff) ** 2)))
        out |= {
            "audio_same_sentences": sum(bool(np.array_equal(ra[i], oa[i])) for i in ra),
            "audio_max_abs_diff": round(float(max(d.max() for d in diff)), 6),
            "audio_diff_rms_db": round(20 * np.log10(diff_rms / ref_rms), 1) if diff_rms and ref_rms else None,
        }
    return out


# ---- the parent: a child per BLAS, the report -----------------------------------------------------------


def plan(a: argparse.Namespace) -> list[dict]:
    sys.path.insert(0, str(HERE))
    from e2e_bench import plan_sentences  # narrate's own planning of the chapter

    return plan_sentences(a.chapter, a.frames, a.seed)[: a.sentences]


def ensure_model(a: argparse.Namespace, work: Path) -> None:
    if a.model is None:
        a.model = work / f"checkpoint-{a.size}"
        subprocess.run(
            [sys.executable, "-m", "narrate.worker.testkit.random_checkpoint", str(a.model), "--size", a.size],
            check=True,
            stdout=subprocess.DEVNULL,
        )


def run_child(a: argparse.Namespace, work: Path, which: str, plan_file: Path) -> dict:
    codes = work / f"codes-{which}.npz"
    cmd = [
        sys.executable,
        __file__,
        "--child",
        which,
        "--model",
        str(a.model),
        "--plan",
        str(plan_file),
        "--voice",
        str(a.voice),
        "--runs",
        str(a.runs),
        "--batch-size",
        str(a.batch_size),
        "--codes-out",
        str(codes),
        *(["--codes-only"] if a.codes_only else []),
    ]
    env = dict(os.environ, NARRATE_BLAS=which, PYTHONUNBUFFERED="1")
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    if p.returncode:
        raise SystemExit(f"the {which} process failed ({p.returncode})")
    fig = json.loads(p.stdout.strip().splitlines()[-1])
    fig["codes_file"] = codes
    return fig


def report(a: argparse.Namespace, sentences: list[dict], by_blas: dict[str, dict]) -> dict:
    import numpy as np

    fig: dict = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "cpus": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
        "sentences": len(sentences),
        "model": a.size if a.given_model is None else str(a.given_model),
        "frames": sum(s["budget"] for s in sentences),
        "batch_size": a.batch_size,
        "runs": a.runs,
        "codes_only": a.codes_only,
        "blas": {},
    }
    print(
        f"\n{fig['sentences']} sentences, {fig['frames']} frames, batch {a.batch_size}, model {fig['model']}"
        f"{', codes only (no codec)' if a.codes_only else ''}; {a.runs} alternated runs each"
    )
    for which, got in by_blas.items():
        runs = got["runs"]
        entry: dict = {"library": got["blas"], "difference": got["difference"]}
        for dtype in DTYPES:
            entry[dtype] = {
                k: stats([r[k] for r in runs[dtype]]) for k in ("frames_per_s", "audio_s_per_s", "cpu_ms_per_frame")
            }
            entry[dtype]["kv_dtype"] = sorted({d for r in runs[dtype] for d in r["kv_dtype"]})
        f32, bf = entry["float32"]["frames_per_s"]["median"], entry["bf16"]["frames_per_s"]["median"]
        entry["ratio_float32_over_bf16"] = round(f32 / bf, 2)
        entry["ratio_per_run"] = [
            round(x["frames_per_s"] / y["frames_per_s"], 2) for x, y in zip(runs["float32"], runs["bf16"], strict=True)
        ]
        cpu_ratio = entry["bf16"]["cpu_ms_per_frame"]["median"] / entry["float32"]["cpu_ms_per_frame"]["median"]
        entry["cpu_ratio_bf16_over_float32"] = round(cpu_ratio, 2)
        fig["blas"][which] = entry
        print(f"{which} ({got['blas']}):")
        for dtype in DTYPES:
            s = entry[dtype]["frames_per_s"]
            print(
                f"  {dtype:8s} {s['median']:8.2f} frames/s (min {s['min']:.2f}, max {s['max']:.2f}, spread "
                f"{s['spread_pct']}%), {entry[dtype]['audio_s_per_s']['median']:.2f} audio s/s, "
                f"{entry[dtype]['cpu_ms_per_frame']['median']:.2f} CPU ms/frame, KV {entry[dtype]['kv_dtype']}"
            )
        print(
            f"  float32/bf16: {entry['ratio_float32_over_bf16']}x (per run: {entry['ratio_per_run']}); "
            f"CPU per frame bf16/float32: {entry['cpu_ratio_bf16_over_float32']}x"
        )
        print(f"  outputs: {json.dumps(got['difference'])}")
    if len(by_blas) == 2:  # the same dtype's codes with and without OpenBLAS
        (_, x), (_, y) = by_blas.items()
        cx, cy = np.load(x["codes_file"]), np.load(y["codes_file"])
        fig["codes_same_across_blas"] = {
            d: sum(bool(np.array_equal(cx[k], cy[k])) for k in cx.files if k.startswith(d + "_")) for d in DTYPES
        }
        print(f"sentences with the same codes under both BLAS libraries: {fig['codes_same_across_blas']}")
    print(json.dumps(fig))
    return fig


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="tiny", choices=["tiny", "0.6b", "1.7b"], help="random checkpoint size")
    ap.add_argument("--model", type=Path, default=None, help="a checkpoint dir instead of a random one")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sentences", type=int, default=24)
    ap.add_argument("--frames", type=int, default=16, help="cap on each sentence's frame budget")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--blas", default="auto,bundled", help="comma-separated NARRATE_BLAS values, a process each")
    ap.add_argument("--codes-only", action="store_true", help="leave the codec out (no audio compared)")
    ap.add_argument("--chapter", type=Path, default=HERE / "chapter.txt")
    ap.add_argument("--voice", type=Path, default=VOICE)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--plan", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--codes-out", type=Path, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)
    a.given_model = a.model
    work = Path(tempfile.mkdtemp(prefix="dtype-bench-", dir="/tmp"))
    try:
        ensure_model(a, work)
        sentences = plan(a)
        plan_file = work / "plan.json"
        plan_file.write_text(json.dumps(sentences))
        by_blas = {which: run_child(a, work, which, plan_file) for which in a.blas.split(",")}
        fig = report(a, sentences, by_blas)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.json:
        a.json.write_text(json.dumps(fig, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
