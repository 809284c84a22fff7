"""tests/bench/e2e_bench.py runs `narrate run` and the plain mlx-audio loop as whole processes on a
short chapter, checks both made the plan's frames, and reports the ratio and narrate's phases."""

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_the_end_to_end_bench_times_both_processes_and_breaks_narrate_down(env, checkpoint, voice_wav, tmp_path):
    chapter = tmp_path / "chapter.txt"
    chapter.write_text("Chapter One.\n\nThe visit was returned in due form. Miss Bennet smiled.\n\nThey went home.\n")
    out = tmp_path / "e2e.json"
    args = [
        "--runs",
        "1",
        "--chapter",
        str(chapter),
        "--model",
        str(checkpoint),
        "--voice",
        str(voice_wav),
        "--max-frames",
        "3",
        "--plain-blas",
        "openblas",
        "--json",
        str(out),
    ]
    proc = subprocess.run(
        [sys.executable, str(HERE / "e2e_bench.py"), *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fig = json.loads(out.read_text())
    assert fig["plain_blas"] == "openblas" and fig["narrate_blas"] == "auto"  # the same BLAS on both sides
    assert fig["sentences"] == 4 and fig["frames"] == 12  # every sentence runs to its capped budget, in both
    narrate = fig["narrate"]
    assert narrate["ratio_plain_over_it"] == round(fig["plain_wall_s"]["median"] / narrate["wall_s"]["median"], 2)
    phases = narrate["breakdown_median_s"]
    assert phases["synthesis"] > 0 and phases["model_load"] > 0 and phases["redis_commands"] > 0
    parts = [
        "interpreter",
        "imports_and_options",
        "prepare",
        "server_start",
        "submit",
        "worker_setup",
        "model_load",
        "plan",
        "voice",
        "synthesis",
        "stitch_tail",
        "job_other",
        "after_job",
        "exit",
    ]
    assert abs(sum(phases[k] for k in parts) - narrate["wall_s"]["median"]) < 0.05  # the parts add up to the wall
    assert fig["plain_phases_median_s"]["synthesis_s"] > 0
    assert "plain/narrate" in proc.stdout and "where narrate's time goes" in proc.stdout
