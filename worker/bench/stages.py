"""``narrate bench``'s stage profile: where a frame's time goes in narrate's continuous batches, stage by stage,
beside the arithmetic of each stage.

One more run of the continuous variant with a ``StageClock`` (worker/engine/decode_loop.py): every stage is
evaluated before the next starts and its codec decodes inline, so the seconds are what each stage costs, not the
pipeline's wall (where the codec overlaps the next steps). A stage's GFLOP a frame is the weights its products
multiply: the talker's layers and codec head once a frame; the code predictor's layers once for each of the
frame's codebooks and one of its heads for each but the first. Attention over the context, the sampling and
the codec's convolutions are left out of the count (their seconds are measured all the same)."""

from __future__ import annotations

from typing import Any, cast

from mlx.utils import tree_flatten
from narrate.worker.engine.decode_loop import StageClock


def _flat(module: Any) -> list[tuple[str, Any]]:
    return cast("list[tuple[str, Any]]", tree_flatten(module.parameters()))


def _weights(module: Any, under: str = "layers") -> int:
    """The elements of the 2-D weights under `under` (a transformer's linear layers; embeddings excluded)."""
    return sum(x.size for name, x in _flat(module) if x.ndim == 2 and under in name)


def gflop_per_frame(model: Any) -> dict[str, float]:
    """The talker's and the code predictor's multiply-adds a frame of one row, times two, in GFLOP."""
    talker = model.talker
    groups = int(model.config.talker_config.num_code_groups)
    heads = [x.size for name, x in _flat(talker.code_predictor) if name.startswith("lm_head")]
    head = heads[0] if heads else 0
    return {
        "talker": round(2 * (_weights(talker.model) + talker.codec_head.weight.size) / 1e9, 3),
        "code_predictor": round(2 * (groups * _weights(talker.code_predictor.model) + (groups - 1) * head) / 1e9, 3),
    }


def profile(clock: StageClock, flops: dict[str, float]) -> dict[str, Any]:
    """Per stage: milliseconds a frame, its share, and for the counted stages GFLOP a frame and GFLOP/s reached."""
    frames = max(clock.frames, 1)
    total = sum(clock.seconds.values())
    stages: dict[str, dict[str, Any]] = {}
    for stage, seconds in sorted(clock.seconds.items(), key=lambda kv: -kv[1]):
        per_frame = seconds / frames
        gflop = flops.get(stage)
        stages[stage] = {
            "ms_per_frame": round(1000 * per_frame, 2),
            "share_pct": round(100 * seconds / total, 1) if total else 0.0,
            "gflop_per_frame": gflop,
            "gflop_per_s": round(gflop / per_frame, 2) if gflop and per_frame > 0 else None,
        }
    counted = sum(flops.values())
    return {
        "frames": clock.frames,
        "ms_per_frame": round(1000 * total / frames, 2),
        "gflop_per_frame_counted": round(counted, 3),
        "stages": stages,
    }


def format_stages(report: dict[str, Any]) -> list[str]:
    """The stage profile's lines of the bench's table."""
    prof = report.get("stages")
    if not prof:
        return []
    lines = [
        f"stage profile, {prof['variant']} ({prof['frames']} row-frames, each stage on its own: "
        f"{prof['ms_per_frame']:.1f} ms a frame):"
    ]
    for stage, s in prof["stages"].items():
        arithmetic = (
            f", {s['gflop_per_frame']:.3f} GFLOP a frame, {s['gflop_per_s']:.1f} GFLOP/s" if s["gflop_per_s"] else ""
        )
        lines.append(f"  {stage:<15} {s['ms_per_frame']:9.2f} ms a frame ({s['share_pct']:.0f} %){arithmetic}")
    return lines
