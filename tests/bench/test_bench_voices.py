"""`narrate bench --voices N`: narrate's batches with the sentences' voices assigned round-robin from
N cloned voices, beside the same batches in one voice, and the ratio of the two."""

import json

from helpers.procs import narrate


def test_bench_compares_rows_of_three_voices_with_rows_of_one(env, checkpoint, tmp_path):
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    args = ["--workload", "fixed", "--sentences", "6", "--frames", "4", "--batch-sizes", "3", "--warmup-frames", "1"]
    proc = narrate(
        env,
        "bench",
        "--model",
        str(checkpoint),
        *args,
        "--variants",
        "static,continuous",
        "--voices",
        "3",
        "--json",
        str(out),
        "--plot",
        str(png),
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["voices"] == 3 and report["voice_kind"] == "clone"
    variants = report["variants"]
    assert list(variants) == ["plain", "static-3", "static-3-3voices", "continuous-3", "continuous-3-3voices"]
    assert {n: v["voices"] for n, v in variants.items()} == {
        "plain": 1,
        "static-3": 1,
        "static-3-3voices": 3,
        "continuous-3": 1,
        "continuous-3-3voices": 3,
    }
    for name, v in variants.items():  # the same sentences and budgets: the same work
        assert v["frames"] == 6 * 4 and v["frames_per_s"] > 0 and v["x_realtime"] > 0, name
        assert v["voice_kind"] == "clone", name
    assert report["speaker_encoder_runs_narrate_total"] == 3  # one x-vector per voice, for the whole run
    assert variants["continuous-3-3voices"]["speaker_encoder_runs"] == 0  # the cast's voices come cached
    for name in ("static-3-3voices", "continuous-3-3voices"):  # rows of different voices share batches
        assert 2 <= variants[name]["voices_per_batch"]["max"] <= 3, variants[name]
    ratios = report["multi_vs_one"]
    assert set(ratios) == {"static-3", "continuous-3"}
    for name, ratio in ratios.items():
        assert ratio == round(variants[f"{name}-3voices"]["frames_per_s"] / variants[name]["frames_per_s"], 3)
    assert report["best_continuous"]["variant"] == "continuous-3"  # among the rows of one voice
    assert "continuous-3-3voices" in proc.stdout and "rows of 3 voices vs rows of one voice" in proc.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_many_voices_need_narrates_batches_and_one_voice_adds_nothing(env, checkpoint, tmp_path):
    base = ["bench", "--model", str(checkpoint)]
    proc = narrate(env, *base, "--voices", "3", "--variants", "mlx-batch", "--json", str(tmp_path / "b.json"))
    assert proc.returncode != 0
    assert "--voices compares narrate's batches: add static or continuous" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = narrate(env, *base, "--voices", "0")
    assert proc.returncode != 0 and "--voices" in proc.stderr and "Traceback" not in proc.stderr
    out = tmp_path / "one.json"
    args = ["--workload", "fixed", "--sentences", "2", "--frames", "2", "--batch-sizes", "2", "--warmup-frames", "1"]
    proc = narrate(env, *base, *args, "--variants", "continuous", "--voices", "1", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["voices"] == 1 and "multi_vs_one" not in report
    assert list(report["variants"]) == ["plain", "continuous-2"]
