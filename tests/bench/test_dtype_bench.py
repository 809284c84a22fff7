"""tests/bench/dtype_bench.py runs narrate's synthesis as bf16 and as float32 (`--quant float32`) in one process
per BLAS library, with the system OpenBLAS and with MLX's bundled one, and compares their speed and outputs."""

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_the_dtype_bench_times_both_dtypes_under_both_blas_libraries(env, checkpoint, voice_wav, tmp_path):
    out = tmp_path / "dtype.json"
    args = [
        "--model",
        str(checkpoint),
        "--voice",
        str(voice_wav),
        "--runs",
        "2",
        "--sentences",
        "2",
        "--frames",
        "3",
        "--batch-size",
        "2",
        "--json",
        str(out),
    ]
    proc = subprocess.run(
        [sys.executable, str(HERE / "dtype_bench.py"), *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fig = json.loads(out.read_text())
    assert (fig["sentences"], fig["frames"], fig["runs"]) == (2, 6, 2)
    assert list(fig["blas"]) == ["auto", "bundled"]
    assert "bundled reference BLAS" in fig["blas"]["bundled"]["library"]
    for entry in fig["blas"].values():
        # Each dtype ran as asked: the talker's KV cache follows its compute dtype.
        assert entry["bf16"]["kv_dtype"] == ["bfloat16"] and entry["float32"]["kv_dtype"] == ["float32"]
        f32, bf = entry["float32"]["frames_per_s"]["median"], entry["bf16"]["frames_per_s"]["median"]
        assert entry["ratio_float32_over_bf16"] == round(f32 / bf, 2) and len(entry["ratio_per_run"]) == 2
        diff = entry["difference"]
        assert diff["sentences"] == 2 and 0 <= diff["codes_same_sentences"] <= 2
        assert diff["audio_same_sentences"] <= diff["codes_same_sentences"]  # different codes: different audio
        assert 0 <= diff["frames_same_pct"] <= diff["codes_same_pct"] <= 100
    assert set(fig["codes_same_across_blas"]) == {"bf16", "float32"}
    assert "float32/bf16" in proc.stdout and "with the same codes under both BLAS" in proc.stdout
