"""``narrate bench``'s torch variants (torch-plain, torch-batch-N) from narrate's side: the Python given
by ``--torch-python`` runs torch_peer.py in a subprocess on the same sentences, budgets, voice sample
and checkpoint (in the layout qwen-tts loads: torch_checkpoint.py), after narrate's own variants,
so the two never share the CPU. Without that Python, or with one that lacks torch or qwen-tts, the
variants are skipped with a one-line reason. torch is never imported here."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from narrate.worker.bench.torch_checkpoint import to_torch_layout
from narrate.worker.bench.workloads import Item

PEER = Path(__file__).with_name("torch_peer.py")
CHECK_TIMEOUT_S = 120  # importing torch and transformers from a cold disk
DTYPES = ("auto", "float32", "bfloat16")


def variant_names(batch_sizes: tuple[int, ...]) -> list[str]:
    return ["torch-plain", *(f"torch-batch-{n}" for n in batch_sizes)]


def check(python: Path | None) -> tuple[dict | None, str | None]:
    """(torch's and qwen-tts's versions, None) if `python` can run the peer, else (None, why not)."""
    if python is None:
        return None, "no --torch-python given (a Python with torch and qwen-tts)"
    try:
        proc = subprocess.run(
            [str(python), str(PEER), "--check"], capture_output=True, text=True, timeout=CHECK_TIMEOUT_S, cwd="/"
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"--torch-python {python} does not run ({e})"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"--torch-python {python} cannot import torch and qwen_tts ({last})"
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        return None, f"--torch-python {python}: unexpected answer {proc.stdout[-200:]!r}"


def run_torch(
    python: Path,
    checkpoint: Path,
    voice: Path,
    items: list[Item],
    batch_sizes: tuple[int, ...],
    warmup_frames: int,
    allow_eos: bool,
    dtype: str,
    threads: int,
    workdir: Path,
    log: Callable[[str], None] = print,
) -> dict:
    """The peer's result (versions, device, dtype, load time and a result per variant, in the bench's
    keys), or {"skipped": why} if it failed."""
    converted = to_torch_layout(checkpoint, workdir / "torch-checkpoint")
    request = {
        "checkpoint": str(converted),
        "voice": str(voice),
        "items": [[it.text, it.budget] for it in items],
        "batch_sizes": list(batch_sizes),
        "warmup_frames": warmup_frames,
        "allow_eos": allow_eos,
        "dtype": dtype,
        "threads": threads,
    }
    (workdir / "torch-request.json").write_text(json.dumps(request))
    out = workdir / "torch-result.json"
    log(f"torch peer ({python}): loading {checkpoint.name} and warming up its variants")
    args = [str(python), str(PEER), str(workdir / "torch-request.json"), str(out)]
    errors = workdir / "torch-stderr.txt"  # a file, not a pipe: its warnings cannot fill a pipe and stall it
    with (
        errors.open("w") as err,
        subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True, cwd=workdir) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:  # its variants' lines as they are measured (not qwen-tts's notices)
            if line.startswith("  torch-"):
                log(line.rstrip())
    if proc.returncode != 0 or not out.exists():
        last = (errors.read_text().strip().splitlines() or ["no output"])[-1]
        return {"skipped": f"the torch peer failed (exit {proc.returncode}): {last}"}
    result: dict = json.loads(out.read_text())
    return result
