"""`narrate bench`'s stage profile and dtype: the continuous variant once more with every stage of the decode loop
evaluated on its own (talker, code predictor, codec, ...), each stage's milliseconds a frame beside its arithmetic
(GFLOP a frame, counted from the weights its products multiply) and the GFLOP/s it reached; `--quant` picks the
dtype every MLX variant computes in, and the report says which."""

import json

from helpers.procs import narrate
from mlx.utils import tree_flatten
from narrate.worker.engine.models import load, resolve


def test_the_stage_profile_says_where_a_frame_goes_and_the_dtype_is_named(env, checkpoint, tmp_path):
    out = tmp_path / "bench.json"
    args = ["--workload", "fixed", "--sentences", "3", "--frames", "4", "--batch-sizes", "2", "--warmup-frames", "1"]
    asked = ["--variants", "continuous", "--quant", "bf16", "--json", str(out)]
    proc = narrate(env, "bench", "--model", str(checkpoint), *args, *asked)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["quant"] == "bf16" and "MLX variants in bf16" in proc.stdout
    prof = report["stages"]
    assert prof["variant"] == "continuous-2" and prof["frames"] == 12  # 3 sentences of 4 frames, EOS disabled
    stages = prof["stages"]
    assert {"talker", "code_predictor", "codec", "sampling", "prefill", "next_input"} <= set(stages)
    assert all(s["ms_per_frame"] > 0 for s in stages.values())
    assert abs(sum(s["share_pct"] for s in stages.values()) - 100) < 1
    # the arithmetic, from the checkpoint's own weights: the talker's layers and codec head once a frame; the code
    # predictor's layers once a codebook (16) and one of its 15 heads for each but the first
    model = load(resolve(str(checkpoint), "bf16")).model
    talker, cp = model.talker, model.talker.code_predictor
    layers = sum(x.size for n, x in tree_flatten(talker.model.parameters()) if x.ndim == 2 and "layers" in n)
    cp_layers = sum(x.size for n, x in tree_flatten(cp.model.parameters()) if x.ndim == 2 and "layers" in n)
    head = cp.lm_head[0].weight.size
    assert stages["talker"]["gflop_per_frame"] == round(2 * (layers + talker.codec_head.weight.size) / 1e9, 3)
    assert stages["code_predictor"]["gflop_per_frame"] == round(2 * (16 * cp_layers + 15 * head) / 1e9, 3)
    for name in ("talker", "code_predictor"):
        s = stages[name]
        reached = s["gflop_per_frame"] / (s["ms_per_frame"] / 1000)  # from the rounded milliseconds
        assert abs(s["gflop_per_s"] - reached) <= 0.05 * reached + 0.01, (name, s)
    assert stages["codec"]["gflop_per_frame"] is None  # measured, not counted
    assert "stage profile, continuous-2" in proc.stdout and "code_predictor" in proc.stdout
