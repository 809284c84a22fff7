"""Write the parity tests' golden files from Qwen's reference implementation.

Run by narrate's Python (it builds the checkpoints with narrate's builder), given a second Python that has
torch and the ``qwen-tts`` package (they pin other transformers than mlx-audio, hence two environments)::

    python3 -m venv /tmp/qwen-ref && /tmp/qwen-ref/bin/pip install torch qwen-tts==0.1.1
    .venv/bin/python tests/parity/make_reference.py --torch-python /tmp/qwen-ref/bin/python

For each checkpoint of cases.CHECKPOINTS it builds the checkpoint from its fixed seed, converts it to the layout
qwen-tts loads (links to the same weight files: worker/bench/torch_checkpoint.py), runs reference_side.py there,
and keeps under tests/parity/golden/: ``NAME.npz`` (what of the reference's output the tests compare: the codec
audio's every 61st sample and per-frame energy, the x-vector, the greedy codes) and ``manifest.json`` (the
versions, a hash of each checkpoint's weights and of every input, so that a test knows it rebuilt the same ones).
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/: `parity` as the tests import it

from parity import cases  # noqa: E402


def reference(torch_python: str, checkpoint: Path, work: Path) -> dict[str, np.ndarray]:
    from narrate.worker.bench.torch_checkpoint import to_torch_layout

    converted = to_torch_layout(checkpoint, work / "torch")
    np.save(work / "codes.npy", cases.codec_codes())
    np.save(work / "voice.npy", cases.voice_audio())
    request = {
        "checkpoint": str(converted),
        "codes": str(work / "codes.npy"),
        "voice": str(work / "voice.npy"),
        "sentences": list(cases.SENTENCES),
        "frames": cases.GREEDY_FRAMES,
        "repetition_penalties": list(cases.REPETITION_PENALTIES),
    }
    (work / "request.json").write_text(json.dumps(request))
    subprocess.run(
        [torch_python, str(HERE / "reference_side.py"), str(work / "request.json"), str(work / "out.npz")], check=True
    )
    with np.load(work / "out.npz") as f:
        return {k: f[k] for k in f.files}


def versions(torch_python: str) -> dict:
    script = (
        "import importlib.metadata as m, json; "
        "print(json.dumps({p: m.version(p) for p in ('torch', 'qwen-tts', 'transformers')}))"
    )
    return json.loads(subprocess.run([torch_python, "-c", script], check=True, capture_output=True, text=True).stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--torch-python", required=True, help="a Python with torch and qwen-tts installed")
    ap.add_argument("--out", type=Path, default=cases.GOLDEN)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {
        "made_by": "tests/parity/make_reference.py",
        "made_on": datetime.date.today().isoformat(),
        "reference": versions(args.torch_python),
        "inputs": {"codec_codes": cases.digest(cases.codec_codes()), "voice": cases.digest(cases.voice_audio())},
        "checkpoints": {},
    }
    with tempfile.TemporaryDirectory(prefix="narrate-parity-") as tmp:
        for ck in cases.CHECKPOINTS:
            work = Path(tmp) / f"{ck.name}-work"
            work.mkdir()
            built = cases.build(ck, Path(tmp))
            print(f"{ck.name}: running the reference", flush=True)
            out = reference(args.torch_python, built, work)
            golden = {f"codec_{k}": v for k, v in cases.audio_summary(out.pop("codec_audio")).items()}
            golden.update(out)
            np.savez_compressed(args.out / f"{ck.name}.npz", **golden)
            manifest["checkpoints"][ck.name] = {
                "size": ck.size,
                "dtype": ck.dtype,
                "seed": ck.seed,
                "codec_attention_scale": ck.codec_attention_scale,
                "weights": cases.weights_digest(built),
            }
    (args.out / cases.MANIFEST.name).write_text(json.dumps(manifest, indent=2) + "\n")
    total = sum(p.stat().st_size for p in args.out.iterdir())
    print(f"wrote {args.out} ({total / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
