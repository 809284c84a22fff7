"""`narrate bench` runs every variant on the tiny checkpoint and reports what it promises."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers.blas import system_openblas
from helpers.procs import NARRATE, narrate


def test_bench_runs_every_variant_on_the_book_workload_and_plots(env, checkpoint, tmp_path):
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    args = ["--workload", "book", "--sentences", "5", "--budget-scale", "0.03", "--batch-sizes", "2"]
    proc = narrate(
        env, "bench", "--model", str(checkpoint), *args, "--warmup-frames", "2", "--json", str(out), "--plot", str(png)
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert list(report["variants"]) == ["plain", "mlx-batch-2", "static-2", "continuous-2"]
    assert report["blas"] == ("libopenblas.so.0" if system_openblas() else "mlx's own")  # its float32 products
    budgets = report["budgets"]["each"]
    assert len(budgets) == 5 and len(set(budgets)) > 2  # the chapter's sentences differ in length
    plain = report["variants"]["plain"]["frames_per_s"]
    for name, v in report["variants"].items():
        assert v["frames"] == sum(budgets), name  # EOS disabled: every sentence runs to its budget
        assert v["frames_per_s"] > 0 and v["first_audio_ms"] > 0 and v["peak_memory_mb"] > 0
        assert v["ratio_to_plain"] == round(v["frames_per_s"] / plain, 3)
    static, continuous = report["variants"]["static-2"], report["variants"]["continuous-2"]
    assert continuous["idle_row_waste_pct"] == 0 and continuous["rows_computed"] == sum(budgets)
    assert static["idle_row_waste_pct"] > 0 and static["rows_computed"] > sum(budgets)
    anchor = report["variants"]["mlx-batch-2"]  # mlx-audio's batch_generate: rows run to the call's longest budget
    assert anchor["idle_row_waste_pct"] > 0 and anchor["rows_computed"] > sum(budgets)
    assert anchor["speaker_encoder_runs"] == 5  # mlx-audio runs it for every row of a call
    assert report["variants"]["plain"]["speaker_encoder_runs"] == 5  # once per sentence
    assert report["speaker_encoder_runs_narrate_total"] == 1  # once per voice, for the whole run
    assert "vs plain" in proc.stdout and "continuous-2" in proc.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_plot_without_matplotlib_is_a_clear_error_before_measuring(env, checkpoint, tmp_path):
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "matplotlib.py").write_text("raise ImportError('no matplotlib here')\n")
    e = dict(env, PYTHONPATH=str(shadow))
    args = ["--model", str(checkpoint), "--plot", str(tmp_path / "b.png"), "--json", str(tmp_path / "b.json")]
    proc = narrate(e, "bench", *args)
    assert proc.returncode != 0
    assert "--plot needs matplotlib" in proc.stderr and "pip install" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "b.json").exists()


def bench_env(env: dict, tmp_path) -> dict:
    """A private TMPDIR, but for MLX's CPU kernel cache (TMPDIR/mlx): built from scratch, its kernels
    would cost a minute of compiling in every test."""
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    shared = Path(tempfile.gettempdir()) / "mlx"
    shared.mkdir(exist_ok=True)
    (tmp / "mlx").symlink_to(shared, target_is_directory=True)
    return dict(env, TMPDIR=str(tmp))


def test_bench_leaves_nothing_behind_and_writes_its_json_under_narrate_home(env, home, checkpoint, tmp_path):
    e = bench_env(env, tmp_path)
    here = tmp_path / "here"
    here.mkdir()
    args = ["bench", "--model", str(checkpoint), "--workload", "fixed", "--sentences", "2", "--frames", "3"]
    proc = narrate(e, *args, "--batch-sizes", "1", "--warmup-frames", "1", cwd=here)
    assert proc.returncode == 0, proc.stderr
    assert list(here.iterdir()) == []  # no bench-results.json in the current directory
    assert list((tmp_path / "tmp").glob("narrate-bench-*")) == []  # its temp folder is gone
    shown = [line for line in proc.stdout.splitlines() if line.startswith("JSON: ")]
    path = Path(shown[0].removeprefix("JSON: "))
    assert path.is_relative_to(home / "bench") and path.suffix == ".json", shown
    assert list(json.loads(path.read_text())["variants"]) == ["plain", "mlx-batch-1", "static-1", "continuous-1"]


def ctrl_c_works() -> None:
    """In the child: SIGINT as in a terminal (a shell ignores it for a command it runs in the
    background, and the child would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_bench_removes_its_temp_folder(env, checkpoint, tmp_path):
    e = bench_env(env, tmp_path)
    args = ["bench", "--model", str(checkpoint), "--workload", "fixed", "--sentences", "8", "--frames", "2000"]
    args += ["--batch-sizes", "1"]
    proc = subprocess.Popen(
        [*NARRATE, *args, "--warmup-frames", "1"],
        env=e,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_works,
    )
    try:
        for line in proc.stderr:
            if line.startswith("loaded "):  # the temp folder exists now; measuring takes minutes
                break
        assert list((tmp_path / "tmp").glob("narrate-bench-*")), "no temp folder to remove"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert list((tmp_path / "tmp").glob("narrate-bench-*")) == []


def test_ctrl_c_while_writing_the_random_checkpoint_leaves_no_half_checkpoint(env, home, tmp_path):
    e = bench_env(env, tmp_path)
    args = ["bench", "--sentences", "1", "--frames", "2", "--batch-sizes", "1", "--warmup-frames", "1"]
    proc = subprocess.Popen(
        [*NARRATE, *args], env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_works
    )
    try:
        for line in proc.stderr:
            if line.startswith("writing a random-weight tiny checkpoint"):
                break
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    made = home / "bench-checkpoint-tiny"
    assert [p.name for p in home.iterdir() if "bench" in p.name] in ([], [made.name])
    if made.exists():  # finished before the signal came: complete
        assert (made / "model.safetensors").is_file() and (made / "speech_tokenizer" / "model.safetensors").is_file()
    assert not [p for p in home.rglob("*") if p.name.startswith(".")]  # no hidden temp checkpoint


def test_the_long_book_stitch_benchmark_runs(tmp_path):
    """`python tests/bench/stitch_bench.py` (the 10-hour stitch figures) on a minute of audio."""
    import json
    import subprocess

    proc = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("stitch_bench.py")),
            "--hours",
            "0.02",
            "--rate",
            "30",
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("JSON: "))[6:])
    assert report["sentences"] > 10 and report["units"] == 1 and 0.019 < report["hours"] < 0.03
    for path in ("segmented", "old"):
        got = report[path]
        assert got["tail_s"] > 0 and got["cpu_ffmpeg_s"] > 0 and got["rss_python_mb"] > 0, report
    assert list(tmp_path.iterdir()) == []  # its temporary directory is gone
