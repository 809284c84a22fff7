"""`narrate bench --voice-kind preset`: narrate's batches with a preset speaker on a random-weight
CustomVoice checkpoint of the same size, beside the same batches of cloned rows."""

import json

from helpers.procs import narrate


def test_bench_compares_preset_rows_with_cloned_rows(env, home, checkpoint, tmp_path):
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    args = ["--workload", "fixed", "--sentences", "3", "--frames", "4", "--batch-sizes", "2", "--warmup-frames", "1"]
    proc = narrate(
        env,
        "bench",
        "--model",
        str(checkpoint),
        *args,
        "--variants",
        "static,continuous",
        "--voice-kind",
        "preset",
        "--json",
        str(out),
        "--plot",
        str(png),
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["voice_kind"] == "preset"
    assert report["preset"] == {"checkpoint": "bench-checkpoint-tiny-custom-voice", "speaker": "ryan"}
    made = json.loads((home / "bench-checkpoint-tiny-custom-voice" / "config.json").read_text())
    assert (made["tts_model_type"], made["tts_model_size"]) == ("custom_voice", "tiny")  # the Base one's size
    variants = report["variants"]
    assert list(variants) == ["plain", "static-2", "static-2-preset", "continuous-2", "continuous-2-preset"]
    assert {n: v["voice_kind"] for n, v in variants.items()} == {
        "plain": "clone",
        "static-2": "clone",
        "static-2-preset": "preset",
        "continuous-2": "clone",
        "continuous-2-preset": "preset",
    }
    for name, v in variants.items():  # the same sentences and budgets: the same work
        assert v["frames"] == 3 * 4 and v["frames_per_s"] > 0 and v["x_realtime"] > 0, name
    assert variants["continuous-2-preset"]["speaker_encoder_runs"] == 0  # a preset has no sample to encode
    assert report["speaker_encoder_runs_narrate_total"] == 1  # the cloned rows' one run
    ratios = report["preset_vs_clone"]
    assert set(ratios) == {"static-2", "continuous-2"}
    for name, ratio in ratios.items():
        assert ratio == round(variants[f"{name}-preset"]["frames_per_s"] / variants[name]["frames_per_s"], 3)
    assert report["best_continuous"]["variant"] == "continuous-2"  # among the cloned rows
    assert "continuous-2-preset" in proc.stdout and "preset rows (ryan) vs cloned rows" in proc.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_preset_rows_need_narrates_batches(env, checkpoint, tmp_path):
    args = ["--model", str(checkpoint), "--voice-kind", "preset", "--variants", "mlx-batch"]
    proc = narrate(env, "bench", *args, "--json", str(tmp_path / "b.json"))
    assert proc.returncode != 0
    assert "add static or continuous to --variants" in proc.stderr and "Traceback" not in proc.stderr
