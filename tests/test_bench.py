"""`narrate bench` runs every variant on the tiny checkpoint and reports what it promises."""

import json

from conftest import narrate


def test_bench_runs_all_variants_and_writes_json(env, checkpoint, tmp_path):
    out = tmp_path / "bench.json"
    proc = narrate(
        env,
        "bench",
        "--model",
        str(checkpoint),
        "--sentences",
        "4",
        "--frames",
        "6",
        "--batch-sizes",
        "1,2,4",
        "--warmup-frames",
        "2",
        "--json",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert list(report["variants"]) == ["plain", "sequential", "batch-1", "batch-2", "batch-4"]
    for name, v in report["variants"].items():
        assert v["frames"] == 4 * 6, name  # EOS disabled: identical work in every variant
        assert v["frames_per_s"] > 0 and v["first_audio_ms"] > 0 and v["peak_memory_mb"] > 0
        assert v["ratio_to_plain"] == round(v["frames_per_s"] / report["variants"]["plain"]["frames_per_s"], 3)
    assert report["variants"]["plain"]["speaker_encoder_runs"] == 4  # once per sentence
    assert report["speaker_encoder_runs_narrate_total"] == 1  # once per voice, for the whole run
    assert "vs plain" in proc.stdout and "batch-4" in proc.stdout
