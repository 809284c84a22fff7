"""``narrate bench``'s measuring (runner.py builds the variants): each variant timed in turn after a
warm-up of all, its results in the bench's keys, and the ratios the report gives between them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mlx.core as mx
from narrate.worker.bench.workloads import Item
from narrate.worker.engine.voice_cache import SpeakerEncoderRuns

FRAMES_PER_SECOND = 12.5
Variant = tuple[str, int, Callable[..., Iterator[int]]]  # (name, rows, run)


def voices_suffix(voices: int) -> str:
    """The name suffix of the variants whose rows speak `voices` cloned voices (1: none)."""
    return f"-{voices}voices" if voices > 1 else ""


def measure(run: Callable[[], Iterator[int]]) -> dict:
    """Time a variant; `run` yields the codec frames of each audio chunk as it arrives."""
    mx.reset_peak_memory()
    enc0 = SpeakerEncoderRuns.count
    t0 = time.perf_counter()
    first = None
    frames = 0
    for n in run():
        if first is None:
            first = time.perf_counter() - t0
        frames += n
    wall = time.perf_counter() - t0
    return {
        "frames": frames,
        "wall_s": round(wall, 4),
        "frames_per_s": round(frames / wall, 3),
        "x_realtime": round(frames / FRAMES_PER_SECOND / wall, 4),
        "first_audio_ms": round(1000 * (first or 0.0), 1),
        "speaker_encoder_runs": SpeakerEncoderRuns.count - enc0,
        "peak_memory_mb": round(mx.get_peak_memory() / 2**20, 1),
    }


def run_variants(
    bench: Any,
    report: dict,
    variants: list[Variant],
    warmup_frames: int,
    out_json: Path | None,
    log: Callable[[str], None],
) -> int:
    """Warm every variant up, then measure each in turn into report["variants"]; returns narrate's
    speaker-encoder runs before measuring (one per voice, for every narrate variant)."""
    enc_total0 = SpeakerEncoderRuns.count
    bench._voices()  # narrate's one speaker-encoder run per voice, for every narrate variant
    narrate_runs = SpeakerEncoderRuns.count - enc_total0
    for _, rows, fn in variants:  # warm-up: compile kernels for the shapes the variants use
        for _ in fn(items=[Item(it.text, warmup_frames) for it in bench.items[:rows]]):
            pass
    for name, _, fn in variants:
        bench.steps, bench.padding, bench.batch_voices = [], [], []
        res = measure(fn)
        computed = sum(r for r, _ in bench.steps)
        res["rows_computed"] = computed if name != "plain" else res["frames"]  # mlx-batch: row-frames
        res["idle_row_waste_pct"] = round(100 * sum(d for _, d in bench.steps) / computed, 2) if computed else 0.0
        padded = sum(bench.padding)
        res["bucket_padding_pct"] = round(100 * padded / (computed + padded), 2) if computed else 0.0
        res["voice_kind"] = "preset" if name.endswith("-preset") or name.startswith("mlx-continuous") else "clone"
        many = len(bench.voice_paths)
        res["voices"] = many if many > 1 and name.endswith(voices_suffix(many)) else 1
        if res["voices"] > 1:  # how many of them share a batch (length-sorted groups of reading-order windows)
            res["voices_per_batch"] = {"min": min(bench.batch_voices), "max": max(bench.batch_voices)}
        report["variants"][name] = res
        log(f"  {name:<22} {res['frames_per_s']:8.2f} frames/s  {res['x_realtime']:7.3f}x realtime")
        if out_json:  # write as results come: long GPU runs keep what they measured
            out_json.write_text(json.dumps(report, indent=2))
    report["speaker_encoder_runs_all"] = SpeakerEncoderRuns.count - enc_total0
    return narrate_runs


def _twin_ratios(variants: dict, suffix: str) -> dict[str, float]:
    """Each `suffix` variant's frames/s over its twin's without the suffix, by the twin's name."""
    return {
        k.removesuffix(suffix): round(v["frames_per_s"] / variants[k.removesuffix(suffix)]["frames_per_s"], 3)
        for k, v in variants.items()
        if k.endswith(suffix)
    }


def _ratios(variants: dict, ours: str, theirs: str, batch_sizes: tuple[int, ...]) -> dict[str, float]:
    """By batch size N: frames/s of `ours` over `theirs` (names with {n}), where both ran."""
    out = {}
    for n in batch_sizes:
        a, b = variants.get(ours.format(n=n)), variants.get(theirs.format(n=n))
        if a and b and b["frames_per_s"]:
            out[str(n)] = round(a["frames_per_s"] / b["frames_per_s"], 3)
    return out


def summarize(report: dict, narrate_runs: int, preset: bool, voices: int, batch_sizes: tuple[int, ...]) -> None:
    """The ratios and totals over the measured variants (report["variants"], in place)."""
    variants = report["variants"]
    base = variants["plain"]["frames_per_s"]
    for res in variants.values():
        res["ratio_to_plain"] = round(res["frames_per_s"] / base, 3) if base else None
    narrate_runs += sum(
        v["speaker_encoder_runs"] for k, v in variants.items() if k.startswith(("static-", "continuous-"))
    )
    report["speaker_encoder_runs_narrate_total"] = narrate_runs  # warm-ups included: one per voice
    if preset:  # each preset variant's frames/s over its cloned twin's
        report["preset_vs_clone"] = _twin_ratios(variants, "-preset")
    if voices > 1:  # each many-voice variant's frames/s over its one-voice twin's
        report["multi_vs_one"] = _twin_ratios(variants, voices_suffix(voices))
    if any(k.startswith("mlx-continuous-") for k in variants):  # narrate's preset rows over mlx-audio's session
        report["vs_mlx_continuous"] = _ratios(variants, "continuous-{n}-preset", "mlx-continuous-{n}", batch_sizes)
    if any(k.startswith("torch-") for k in variants):  # narrate's cloned rows over the PyTorch reference
        report["vs_torch_batch"] = _ratios(variants, "continuous-{n}", "torch-batch-{n}", batch_sizes)
        report["vs_torch_plain"] = _ratios(variants, "continuous-{n}", "torch-plain", batch_sizes)
    best = max(
        (
            k
            for k, v in variants.items()
            if k.startswith("continuous-") and v["voice_kind"] == "clone" and v["voices"] == 1
        ),
        key=lambda k: variants[k]["frames_per_s"],
        default=None,
    )
    if best:
        report["best_continuous"] = {"variant": best, "ratio_to_plain": variants[best]["ratio_to_plain"]}
