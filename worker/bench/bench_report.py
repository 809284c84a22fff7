"""``narrate bench``'s results for people: the table it prints and the chart of ``--plot``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from narrate.jobs.errors import NarrateError
from narrate.worker.bench.stages import format_stages


def family(name: str) -> str:
    """A variant's family: plain, mlx-batch, static, continuous, mlx-continuous or torch
    (static-8-preset: static; torch-batch-4: torch)."""
    for prefix in ("mlx-batch", "mlx-continuous"):
        if name.startswith(prefix):
            return prefix
    return name.split("-")[0]


def _by_n(ratios: dict[str, float]) -> str:
    return ", ".join(f"{n} rows {ratio:.2f}x" for n, ratio in ratios.items())


def format_table(report: dict) -> str:
    w = max(15, *(len(n) + 1 for n in report["variants"]))
    head = f"{'variant':<{w}}{'frames':>8}{'frames/s':>10}{'x realtime':>12}{'first audio':>13}{'waste':>8}"
    head += f"{'spk enc':>9}{'peak MB':>9}{'vs plain':>10}"
    lines = [f"MLX variants in {report['quant']}" if report.get("quant") else "", head, "-" * len(head)]
    lines = lines if lines[0] else lines[1:]
    for name, r in report["variants"].items():
        lines.append(
            f"{name:<{w}}{r['frames']:>8}{r['frames_per_s']:>10.2f}{r['x_realtime']:>12.3f}"
            f"{r['first_audio_ms']:>10.0f} ms{r['idle_row_waste_pct']:>7.1f}%{r['speaker_encoder_runs']:>9}"
            f"{r['peak_memory_mb']:>9.0f}{r['ratio_to_plain']:>9.2f}x"
        )
    if report.get("preset_vs_clone"):
        speaker = report.get("preset", {}).get("speaker", "")
        ratios = ", ".join(f"{name} {ratio:.2f}x" for name, ratio in report["preset_vs_clone"].items())
        lines.append(f"preset rows ({speaker}) vs cloned rows, frames/s: {ratios}")
    if report.get("multi_vs_one"):
        ratios = ", ".join(f"{name} {ratio:.2f}x" for name, ratio in report["multi_vs_one"].items())
        lines.append(f"rows of {report['voices']} voices vs rows of one voice, frames/s: {ratios}")
    if report.get("vs_mlx_continuous"):
        lines.append(
            f"narrate continuous preset vs mlx-audio's continuous session: {_by_n(report['vs_mlx_continuous'])}"
        )
    lines += format_stages(report)
    if report.get("vs_torch_batch"):
        lines.append(f"narrate continuous vs qwen-tts batched (torch): {_by_n(report['vs_torch_batch'])}")
    if report.get("vs_torch_plain"):
        lines.append(f"narrate continuous vs qwen-tts one sentence a call (torch): {_by_n(report['vs_torch_plain'])}")
    if report.get("torch", {}).get("dtype"):
        t = report["torch"]
        memory = next((v["peak_memory_of"] for v in report["variants"].values() if "peak_memory_of" in v), "")
        line = f"torch {t['torch']}, qwen-tts {t['qwen_tts']}: {t['device']}, {t['dtype']}, {t['threads']} threads"
        lines.append(f"{line}; its peak MB: {memory}" if memory else line)
    skipped: dict[str, list[str]] = {}
    for name, why in report.get("skipped", {}).items():
        skipped.setdefault(why, []).append(name)
    lines += [f"skipped {', '.join(names)}: {why}" for why, names in skipped.items()]
    return "\n".join(lines)


def pyplot() -> Any:
    """matplotlib's pyplot drawing into files, or a NarrateError saying how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        raise NarrateError(
            "--plot needs matplotlib, an optional extra: pip install -e '.[plot]' (or pip install matplotlib)"
        ) from None
    return plt


def plot(report: dict, path: Path) -> None:
    """A PNG: x realtime per variant (with its ratio to plain) and time to first audio; the bars of
    preset-speaker variants hatched //, those of rows of many voices xx."""
    plt = pyplot()
    names = list(report["variants"])
    rows = [report["variants"][n] for n in names]
    palette = {"plain": "#888888", "mlx-batch": "#55a868", "static": "#4c72b0", "continuous": "#dd8452"}
    palette |= {"mlx-continuous": "#8172b3", "torch": "#c44e52"}
    colors = [palette[family(n)] for n in names]
    hatches = ["//" if r.get("voice_kind") == "preset" else "xx" if r.get("voices", 1) > 1 else "" for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(6, 0.9 * len(names) + 2), 7), sharex=True)
    bars = top.bar(names, [r["x_realtime"] for r in rows], color=colors, hatch=hatches)
    top.bar_label(bars, labels=[f"{r['ratio_to_plain']:.2f}x" for r in rows], fontsize=8)
    top.set_ylabel("x realtime (audio s / wall s)")
    title = f"narrate bench: {report['workload']} workload, {report['sentences']} sentences"
    top.set_title(f"{title}\n{report['checkpoint']} on {report['device']} (labels: frames/s vs plain)")
    bottom.bar(names, [r["first_audio_ms"] for r in rows], color=colors, hatch=hatches)
    bottom.set_ylabel("time to first audio (ms)")
    bottom.tick_params(axis="x", labelrotation=45)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
