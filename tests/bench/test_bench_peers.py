"""`narrate bench`'s peers: mlx-audio's continuous-batching session (mlx-continuous-N) beside
narrate's preset rows, and the PyTorch qwen-tts package (torch-plain, torch-batch-N) run by a
separate Python; the checkpoint conversion for qwen-tts keeps every weight."""

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from helpers.procs import narrate

# A Python with torch and qwen-tts (a venv of its own: torch is no dependency of narrate).
TORCH_PYTHON = os.environ.get("NARRATE_TEST_TORCH_PYTHON")
BOOK = ["--workload", "book", "--sentences", "4", "--budget-scale", "0.03", "--warmup-frames", "1"]


def test_mlx_continuous_runs_beside_narrates_preset_rows(env, home, checkpoint, tmp_path):
    out = tmp_path / "bench.json"
    proc = narrate(
        env,
        "bench",
        "--model",
        str(checkpoint),
        *BOOK,
        "--batch-sizes",
        "2",
        "--variants",
        "continuous,mlx-continuous",
        "--json",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    variants = report["variants"]  # mlx-continuous brings the CustomVoice checkpoint and narrate's preset rows
    assert list(variants) == ["plain", "continuous-2", "continuous-2-preset", "mlx-continuous-2"]
    budgets = report["budgets"]["each"]
    assert len(set(budgets)) > 1  # rows of different lengths: each request must stop at its own
    for name, v in variants.items():  # EOS disabled, each sentence exactly its budget: the same work
        assert v["frames"] == sum(budgets) and v["frames_per_s"] > 0 and v["peak_memory_mb"] > 0, name
    theirs = variants["mlx-continuous-2"]
    assert theirs["voice_kind"] == "preset" and theirs["idle_row_waste_pct"] == 0
    assert theirs["speaker_encoder_runs"] == 0
    ours = variants["continuous-2-preset"]["frames_per_s"]
    assert report["vs_mlx_continuous"] == {"2": round(ours / theirs["frames_per_s"], 3)}
    assert "narrate continuous preset vs mlx-audio's continuous session: 2 rows" in proc.stdout
    assert "skipped" not in report


def test_mlx_audios_session_stops_each_request_at_its_own_budget(custom_voice_checkpoint):
    from narrate.worker.bench.mlx_continuous import mlx_continuous
    from narrate.worker.bench.runner import _load_no_eos
    from narrate.worker.bench.workloads import Item

    loaded = _load_no_eos(custom_voice_checkpoint, False)
    items = [Item(f"Sentence number {i} is read aloud.", b) for i, b in enumerate([3, 7, 1, 5, 2])]
    made = list(mlx_continuous(loaded.model, items, 2, loaded.speakers[0]))
    # Two slots: 3 and 7 start; 3 ends at its third step and 1 takes its slot in that step (and ends
    # at once), 5 takes it at the next; 7 ends, 2 takes its slot; 5 and 2 end together.
    assert made == [3, 1, 7, 5, 2]


def test_torch_variants_are_skipped_with_a_reason(env, checkpoint, tmp_path):
    for python, why in ((None, "no --torch-python given"), (sys.executable, "cannot import torch and qwen_tts")):
        out = tmp_path / "bench.json"
        args = ["--torch-python", python] if python else []
        proc = narrate(
            env,
            "bench",
            "--model",
            str(checkpoint),
            *BOOK,
            "--batch-sizes",
            "2",
            "--variants",
            "torch",
            *args,
            "--json",
            str(out),
        )
        assert proc.returncode == 0, proc.stderr
        report = json.loads(out.read_text())
        assert list(report["variants"]) == ["plain"]
        assert set(report["skipped"]) == {"torch-plain", "torch-batch-2"}
        assert all(why in reason and "\n" not in reason for reason in report["skipped"].values()), report["skipped"]
        assert f"skipped torch-plain, torch-batch-2: {report['skipped']['torch-plain']}" in proc.stdout


@pytest.mark.skipif(not TORCH_PYTHON, reason="set NARRATE_TEST_TORCH_PYTHON to a Python with torch and qwen-tts")
def test_torch_variants_run_qwen_tts_on_the_same_work(env, checkpoint, tmp_path):
    out = tmp_path / "bench.json"
    proc = narrate(
        env,
        "bench",
        "--model",
        str(checkpoint),
        *BOOK,
        "--batch-sizes",
        "2",
        "--variants",
        "continuous,torch",
        "--torch-python",
        str(TORCH_PYTHON),
        "--torch-threads",
        "1",
        "--json",
        str(out),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert list(report["variants"]) == ["plain", "continuous-2", "torch-plain", "torch-batch-2"], report.get("skipped")
    budgets = report["budgets"]["each"]
    for name in ("torch-plain", "torch-batch-2"):
        v = report["variants"][name]
        assert v["frames"] == sum(budgets) and v["frames_per_s"] > 0 and v["voice_kind"] == "clone", name
        assert v["peak_memory_of"] in ("process RSS", "process RSS, peak since start")
    assert report["variants"]["torch-plain"]["idle_row_waste_pct"] == 0
    batch = report["variants"]["torch-batch-2"]  # a call runs every row to its longest budget
    assert batch["idle_row_waste_pct"] > 0 and batch["rows_computed"] > sum(budgets)
    assert report["torch"]["device"] == "cpu" and report["torch"]["dtype"] == "float32"
    assert report["torch"]["threads"] == 1 and report["torch"]["qwen_tts"]
    assert set(report["vs_torch_batch"]) == set(report["vs_torch_plain"]) == {"2"}


def test_the_checkpoint_qwen_tts_loads_keeps_every_weight(checkpoint, tmp_path):
    from narrate.worker.bench.torch_checkpoint import read_tensors, same_weights, to_torch_layout, weight_files

    converted = to_torch_layout(checkpoint, tmp_path / "torch")
    assert [str(p) for p in weight_files(checkpoint)] == ["model.safetensors", "speech_tokenizer/model.safetensors"]
    assert same_weights(checkpoint, converted) == []  # every tensor there, same name, shape, dtype and values
    source = {rel: read_tensors(checkpoint / rel) for rel in weight_files(checkpoint)}
    assert sum(len(t) for t in source.values()) > 100
    codec = json.loads((converted / "speech_tokenizer" / "config.json").read_text())["encoder_config"]
    assert codec["upsample_groups"] == codec["hidden_size"]
    extractor = json.loads((converted / "speech_tokenizer" / "preprocessor_config.json").read_text())
    assert extractor["sampling_rate"] == 24000
    assert json.loads((converted / "config.json").read_text()) == json.loads((checkpoint / "config.json").read_text())

    # the check itself catches a changed value: a copy with one byte of tensor data flipped
    changed = tmp_path / "changed"
    shutil.copytree(converted, changed, symlinks=False)
    weights = changed / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-2] ^= 0xFF
    weights.unlink()
    weights.write_bytes(bytes(data))
    problems = same_weights(checkpoint, changed)
    assert len(problems) == 1 and problems[0].endswith("differs"), problems


def test_the_torch_script_imports_nothing_from_narrate():
    import ast

    script = Path(__file__).resolve().parents[2] / "worker" / "bench" / "torch_peer.py"
    names = set()
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0])
    assert not names & {"narrate", "mlx", "mlx_audio"}, names
