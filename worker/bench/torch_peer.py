"""``narrate bench``'s torch peer: the official PyTorch package ``qwen-tts`` (Qwen's reference
implementation), run by a separate Python that has torch and qwen-tts (``--torch-python``), never
by narrate's: torch is no dependency of narrate. This file imports nothing from narrate; the bench
runs it by its path::

    PYTHON torch_peer.py --check              # prints {"torch": ..., "qwen_tts": ...} or fails
    PYTHON torch_peer.py REQUEST.json OUT.json

REQUEST: ``checkpoint`` (in the layout qwen-tts loads: torch_checkpoint.py), ``voice`` (a WAV),
``items`` ([text, frame budget] in reading order), ``batch_sizes``, ``warmup_frames``,
``allow_eos``, ``dtype`` (auto: bfloat16 on CUDA, float32 on a CPU, where torch has no fast
bfloat16 matrix products without AVX-512 BF16 or AMX), ``threads`` (torch's intra-op threads; 0:
its default, one per core).

Variants, each warmed up first (every variant on the first N sentences at ``warmup_frames``
frames), then measured in turn:

  torch-plain    ``generate_voice_clone`` per sentence (one sentence at a time)
  torch-batch-N  ``generate_voice_clone`` with lists of N sentences in reading order per call

Both clone in x-vector mode (``x_vector_only_mode=True``, narrate's mode) in narrate's prompt layout (the whole
sentence in the prefill, ``non_streaming_mode=True``: the clone call's default is the other layout, the text fed
beside the codec frames, a token a frame, which is other work; the result says which) with one voice prompt
built once by ``create_voice_clone_prompt`` (the reference's way to reuse a voice; one speaker
encoder run), the checkpoint's sampling (generation_config.json), EOS disabled unless allowed (the
EOS id moved out of the vocabulary: every row generates up to ``max_new_tokens``).
``max_new_tokens`` is a call's longest budget plus one: the reference stops after that many
first-codebook tokens and predicts the residual codebooks of all but the last, so a row makes
exactly its budget in frames. A batched call runs every row to the call's longest budget (frames
past a row's own budget are computed and dropped: idle-row waste) and returns when every row is
decoded: first audio is the first call's end. Peak memory: the CUDA allocator's peak on a GPU,
else the process's peak resident memory (PeakMemory).
"""

from __future__ import annotations

import importlib.machinery
import json
import sys
import time
import types
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

FRAMES_PER_SECOND = 12.5
SAMPLES_PER_FRAME = 1920  # 24 kHz / 12.5
NON_STREAMING = True  # the prompt layout (narrate's: docs/models.md); the result names it
# A variant: (its sentences as (text, frame budget), the list its steps' (rows computed, past a budget)
# go to) -> the frames of each call, within the budgets.
Run = Callable[[list[tuple[str, int]], list[tuple[int, int]]], Iterator[int]]


def _stub_torchaudio() -> None:
    """qwen-tts imports torchaudio (for its 25 Hz tokenizer's Kaldi features only: the 12 Hz models
    never call it). torchaudio's wheels on PyPI are CUDA builds that cannot load beside a CPU-only
    torch; then an empty stand-in lets qwen-tts import."""
    try:
        import torchaudio  # noqa: F401
    except (ImportError, OSError):
        parent = None
        for name in ("torchaudio", "torchaudio.compliance", "torchaudio.compliance.kaldi"):
            module = types.ModuleType(name)
            module.__spec__ = importlib.machinery.ModuleSpec(name, None)
            sys.modules[name] = module
            if parent is not None:
                setattr(parent, name.rsplit(".", 1)[1], module)
            parent = module


def versions() -> dict:
    _stub_torchaudio()
    import importlib.metadata

    import qwen_tts  # noqa: F401
    import torch

    return {"torch": torch.__version__, "qwen_tts": importlib.metadata.version("qwen-tts")}


class PeakMemory:
    """A variant's peak memory: CUDA's allocator peak; on a CPU the process's peak resident memory
    (Linux: its high-water mark, reset at the start through /proc/self/clear_refs; elsewhere the
    peak since the process started). Never a sampling thread: one polling for the GIL slows torch's
    Python-driven generate loop several times over (measured here: 8 against 1.8 frames/s)."""

    def __init__(self, torch: Any, device: str):
        self.torch, self.cuda = torch, device == "cuda"
        self.peak = 0
        self.of = "CUDA allocator" if self.cuda else "process RSS"

    @staticmethod
    def _hwm() -> int | None:
        try:
            with open("/proc/self/status", encoding="ascii") as f:
                return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
        except (OSError, StopIteration, ValueError):
            return None

    def __enter__(self) -> PeakMemory:
        if self.cuda:
            self.torch.cuda.reset_peak_memory_stats()
            return self
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
                f.write("5")  # reset the peak resident set size to the current one
        except OSError:
            self.of = "process RSS, peak since start"
        return self

    def __exit__(self, *exc: object) -> None:
        if self.cuda:
            self.peak = self.torch.cuda.max_memory_allocated()
            return
        hwm = self._hwm()
        if hwm is None:
            import resource

            scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
            hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
            self.of = "process RSS, peak since start"
        self.peak = hwm


class Peer:
    def __init__(self, request: dict):
        _stub_torchaudio()
        import torch
        from qwen_tts import Qwen3TTSModel

        self.torch = torch
        if int(request.get("threads", 0)) > 0:  # 0: torch's own default (a thread per core)
            torch.set_num_threads(int(request["threads"]))
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = request.get("dtype", "auto")
        if dtype == "auto":
            dtype = "bfloat16" if self.device == "cuda" else "float32"
        self.dtype = dtype
        t0 = time.perf_counter()
        kwargs = {"device_map": "cuda:0"} if self.device == "cuda" else {}
        self.model = Qwen3TTSModel.from_pretrained(
            request["checkpoint"], dtype=getattr(torch, dtype), local_files_only=True, **kwargs
        )
        self.load_s = time.perf_counter() - t0
        if not request.get("allow_eos"):  # an id the sampler can never produce: every row runs to its budget
            talker = self.model.model.config.talker_config
            talker.codec_eos_token_id = talker.vocab_size
        self.prompt = self.model.create_voice_clone_prompt(ref_audio=request["voice"], x_vector_only_mode=True)

    def call(self, texts: list[str], budgets: list[int], seed: int) -> list[int]:
        """One ``generate_voice_clone`` call; each row's frames (decoded samples / 1920)."""
        self.torch.manual_seed(seed)
        wavs, _ = self.model.generate_voice_clone(
            texts if len(texts) > 1 else texts[0],
            language="Auto",
            voice_clone_prompt=self.prompt * len(texts),
            max_new_tokens=max(budgets) + 1,
            non_streaming_mode=NON_STREAMING,  # narrate's prompt layout: the whole sentence in the prefill
        )
        return [round(len(w) / SAMPLES_PER_FRAME) for w in wavs]

    def plain(self, items: list[tuple[str, int]], steps: list[tuple[int, int]]) -> Iterator[int]:
        for i, (text, budget) in enumerate(items):
            (made,) = self.call([text], [budget], i)
            steps.append((made, max(0, made - budget)))
            yield min(made, budget)

    def batch(self, size: int, items: list[tuple[str, int]], steps: list[tuple[int, int]]) -> Iterator[int]:
        for start in range(0, len(items), size):
            group = items[start : start + size]
            made = self.call([t for t, _ in group], [b for _, b in group], start)
            steps.append((sum(made), sum(max(0, m - b) for m, (_, b) in zip(made, group, strict=True))))
            yield sum(min(m, b) for m, (_, b) in zip(made, group, strict=True))

    def measure(self, run: Callable[[list[tuple[int, int]]], Iterable[int]]) -> dict:
        steps: list[tuple[int, int]] = []
        with PeakMemory(self.torch, self.device) as memory:
            t0 = time.perf_counter()
            first = None
            frames = 0
            for n in run(steps):
                if first is None:
                    first = time.perf_counter() - t0
                frames += n
            wall = time.perf_counter() - t0
        computed = sum(r for r, _ in steps)
        return {
            "frames": frames,
            "wall_s": round(wall, 4),
            "frames_per_s": round(frames / wall, 3),
            "x_realtime": round(frames / FRAMES_PER_SECOND / wall, 4),
            "first_audio_ms": round(1000 * (first or 0.0), 1),
            "speaker_encoder_runs": 0,  # the prompt's one run is before measuring
            "peak_memory_mb": round(memory.peak / 2**20, 1),
            "peak_memory_of": memory.of,
            "rows_computed": computed,
            "idle_row_waste_pct": round(100 * sum(d for _, d in steps) / computed, 2) if computed else 0.0,
            "bucket_padding_pct": 0.0,
            "voice_kind": "clone",
            "voices": 1,
        }


def run(request: dict) -> dict:
    peer = Peer(request)
    items = [(t, int(b)) for t, b in request["items"]]
    sizes = [int(n) for n in request["batch_sizes"]]
    variants: list[tuple[str, int, Run]] = [("torch-plain", 1, peer.plain)]
    variants += [(f"torch-batch-{n}", n, partial(peer.batch, n)) for n in sizes]
    warm = int(request["warmup_frames"])
    for _, rows, fn in variants:  # warm-up, as the bench's other variants
        for _ in fn([(t, warm) for t, _ in items[:rows]], []):
            pass
    out: dict = {
        **versions(),
        "device": peer.device,
        "dtype": peer.dtype,
        "layout": "non_streaming_mode=True: the whole sentence in the prefill, as narrate" if NON_STREAMING else "",
        "threads": peer.torch.get_num_threads(),
        "load_s": round(peer.load_s, 2),
        "variants": {},
    }
    for name, _, fn in variants:
        out["variants"][name] = res = peer.measure(partial(fn, items))
        print(f"  {name:<22} {res['frames_per_s']:8.2f} frames/s  {res['x_realtime']:7.3f}x realtime", flush=True)
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["--check"]:
        print(json.dumps(versions()))
        return 0
    request_path, out_path = argv
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    result = run(request)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
