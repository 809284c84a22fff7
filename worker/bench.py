"""``narrate bench``: plain mlx-audio against narrate's engine, side by side, in one process.

On the same sentences, voice and loaded checkpoint, after a warm-up of every variant:

  (a) plain      mlx-audio ``generate`` per sentence with ``ref_audio`` (a wav path), the way a
                 script would call it: the speaker encoder runs for every sentence
  (b) sequential narrate's engine, one sentence at a time, cached voice embedding
  (c) batch-N    narrate's batched x-vector engine with N rows per batch

Every sentence generates exactly ``frames`` codec frames (EOS is disabled, unless --allow-eos)
so all variants do the same work. Reported per variant: codec frames/s, audio seconds per wall
second (x realtime), time to first audio, speaker-encoder runs, MLX peak memory, and the
frames/s ratio to (a). Compare ratios, not single times: shared machines are noisy.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
import time
import wave
from collections.abc import Callable, Iterator
from pathlib import Path

import mlx.core as mx
import numpy as np
from narrate.jobs.localstate import private_dir
from narrate.jobs.synthesis import Chunk, Sentence

from .mlx_engine import STREAM_INTERVAL_S, MlxEngine
from .models import LoadedModel, SpeakerEncoderRuns, load, resolve

SAMPLE_RATE = 24_000
FRAMES_PER_SECOND = 12.5
SENTENCES = [
    "The storm came in from the west just after dark.",
    "By nine o'clock the rain was falling sideways, and the old lighthouse shook with every gust.",
    "Mara climbed the spiral stairs with a lantern in one hand.",
    "She had kept the light for eleven years.",
    "In all that time it had never once gone out, and tonight would not be the first.",
    "At the top, the great lens turned slowly, throwing its beam across the black water.",
    "Somewhere out there a ship was fighting its way toward the harbor.",
    "She checked the oil, trimmed the wick, and settled in to wait for morning.",
]


def synthetic_voice(seconds: float = 4.0) -> np.ndarray:
    """A voiced harmonic signal with a wobbling pitch (no speech synthesizer needed)."""
    t = np.arange(int(SAMPLE_RATE * seconds)) / SAMPLE_RATE
    f0 = 120 + 15 * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / SAMPLE_RATE
    sig = sum(np.sin(k * phase) / k for k in range(1, 20))
    sig *= 0.5 + 0.5 * np.sin(2 * np.pi * 2.5 * t) ** 2
    return (0.3 * sig / np.abs(sig).max()).astype(np.float32)


def _write_wav(path: Path, samples: np.ndarray) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def _measure(run: Callable[[], Iterator[int]]) -> dict:
    """Time a variant; `run` yields the codec frames of each audio chunk as it arrives."""
    mx.reset_peak_memory()
    enc0 = SpeakerEncoderRuns.count
    t0 = time.perf_counter()
    first = None
    frames = 0
    for n in run():
        if first is None:
            first = time.perf_counter() - t0
        frames += n
    wall = time.perf_counter() - t0
    return {
        "frames": frames,
        "wall_s": round(wall, 4),
        "frames_per_s": round(frames / wall, 3),
        "x_realtime": round(frames / FRAMES_PER_SECOND / wall, 4),
        "first_audio_ms": round(1000 * (first or 0.0), 1),
        "speaker_encoder_runs": SpeakerEncoderRuns.count - enc0,
        "peak_memory_mb": round(mx.get_peak_memory() / 2**20, 1),
    }


class Bench:
    def __init__(self, loaded: LoadedModel, sentences: list[str], frames: int, voice_path: Path):
        self.loaded = loaded
        self.model = loaded.model
        self.sentences = sentences
        self.frames = frames
        self.voice_path = voice_path
        self.embedding: mx.array | None = None

    def plain(self, frames: int | None = None, texts: list[str] | None = None) -> Iterator[int]:
        for i, text in enumerate(texts or self.sentences):
            mx.random.seed(i)
            for r in self.model.generate(
                text=text, ref_audio=str(self.voice_path), max_tokens=frames or self.frames, stream=True,
                streaming_interval=STREAM_INTERVAL_S, verbose=False,
            ):  # fmt: skip
                yield int(r.token_count)

    def _voice(self) -> mx.array:
        if self.embedding is None:  # computed once per benchmark run, like the worker's cache
            from narrate.jobs.voices import voice_samples

            audio = mx.array(voice_samples(self.voice_path.read_bytes()))
            emb = type(self.model).extract_speaker_embedding(self.model, audio)
            self.embedding = emb.astype(self.loaded.talker_dtype)
            mx.eval(self.embedding)
        return self.embedding

    def _sentences(self, frames: int | None, texts: list[str] | None) -> list[Sentence]:
        return [Sentence(i, t, 1000 + i, frames or self.frames) for i, t in enumerate(texts or self.sentences)]

    def sequential(self, frames: int | None = None, texts: list[str] | None = None) -> Iterator[int]:
        chunks: Iterator[Chunk] = MlxEngine(self.loaded).sequential(self._sentences(frames, texts), self._voice())
        for c in chunks:
            yield c.frames

    def batched(self, size: int, frames: int | None = None, texts: list[str] | None = None) -> Iterator[int]:
        engine = MlxEngine(self.loaded, batch_size=size, runaway_retries=0)
        for c in engine.batched(self._sentences(frames, texts), self._voice(), size):
            yield c.frames


def default_json(home: Path) -> Path:
    """Where the results go without --json: $NARRATE_HOME/bench/<local time>.json."""
    return home / "bench" / f"{time.strftime('%Y%m%d-%H%M%S')}.json"


def _complete(checkpoint: Path) -> bool:
    return all((checkpoint / name).is_file() for name in ("model.safetensors", "speech_tokenizer/model.safetensors"))


def random_checkpoint(home: Path, size: str, log: Callable[[str], None] = print) -> Path:
    """A random-weight checkpoint of `size` under `home`, written once and reused. It is written
    into a hidden temp folder and renamed into place: an interrupted run leaves no half checkpoint."""
    from .testkit.random_checkpoint import write_checkpoint

    path = home / f"bench-checkpoint-{size}"
    if _complete(path):
        return path
    private_dir(home, "NARRATE_HOME")
    shutil.rmtree(path, ignore_errors=True)  # what an interrupted older version left
    log(f"writing a random-weight {size} checkpoint to {path}")
    tmp = home / f".bench-checkpoint-{size}.{os.getpid()}"  # named, so `finally` finds it even if interrupted early
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(mode=0o700)
        write_checkpoint(tmp, size=size)
        try:
            tmp.rename(path)
        except OSError:
            if not _complete(path):  # not a concurrent bench that got there first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def run_bench(
    checkpoint: Path,
    sentences: int = 16,
    frames: int = 24,
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16),
    warmup_frames: int = 4,
    allow_eos: bool = False,
    out_json: Path | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    t0 = time.perf_counter()
    loaded = load(resolve(str(checkpoint), None))
    load_s = time.perf_counter() - t0
    if not allow_eos:  # an id the sampler can never produce: every sentence runs to `frames`
        tc = loaded.model.config.talker_config
        tc.codec_eos_token_id = tc.vocab_size
    texts = (SENTENCES * (sentences // len(SENTENCES) + 1))[:sentences]
    cfg = loaded.model.config.talker_config
    report: dict = {
        "checkpoint": checkpoint.name,
        "talker": {"hidden_size": cfg.hidden_size, "layers": cfg.num_hidden_layers},
        "device": str(mx.default_device()),
        "platform": platform.platform(),
        "mlx": mx.__version__,
        "sentences": sentences,
        "frames_per_sentence": frames,
        "eos": "allowed" if allow_eos else "disabled (every sentence generates exactly frames_per_sentence)",
        "load_s": round(load_s, 2),
        "variants": {},
    }
    if out_json:
        out_json.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="narrate-bench-") as tmp:  # removed whatever happens (Ctrl-C too)
        bench = Bench(loaded, texts, frames, _write_wav(Path(tmp) / "voice.wav", synthetic_voice()))
        log(f"loaded {checkpoint} in {load_s:.1f}s on {report['device']}; warming up every variant")
        _run_variants(bench, report, batch_sizes, warmup_frames, out_json, log)
    report["wall_s"] = round(time.perf_counter() - t0, 1)
    if out_json:
        out_json.write_text(json.dumps(report, indent=2))
    return report


def _run_variants(
    bench: Bench,
    report: dict,
    batch_sizes: tuple[int, ...],
    warmup_frames: int,
    out_json: Path | None,
    log: Callable[[str], None],
) -> None:
    """Warm every variant up, then measure each in turn into report["variants"]."""
    texts = bench.sentences
    variants: list[tuple[str, Callable[..., Iterator[int]]]] = [
        ("plain", bench.plain),
        ("sequential", bench.sequential),
    ] + [(f"batch-{n}", lambda n=n, **k: bench.batched(n, **k)) for n in batch_sizes]
    enc_total0 = SpeakerEncoderRuns.count
    bench._voice()  # narrate's one speaker-encoder run for this voice, for every narrate variant
    narrate_runs = SpeakerEncoderRuns.count - enc_total0
    for name, fn in variants:  # warm-up: compile kernels for every shape the variants use
        warm_texts = texts[: int(name.split("-")[1])] if name.startswith("batch-") else texts[:1]
        for _ in fn(frames=warmup_frames, texts=warm_texts):
            pass
    for name, fn in variants:
        res = _measure(fn)
        report["variants"][name] = res
        log(f"  {name:<11} {res['frames_per_s']:8.2f} frames/s  {res['x_realtime']:7.3f}x realtime")
        if out_json:  # write as results come: long GPU runs keep what they measured
            out_json.write_text(json.dumps(report, indent=2))
    base = report["variants"]["plain"]["frames_per_s"]
    for res in report["variants"].values():
        res["ratio_to_plain"] = round(res["frames_per_s"] / base, 3) if base else None
    narrate_runs += sum(v["speaker_encoder_runs"] for k, v in report["variants"].items() if k != "plain")
    report["speaker_encoder_runs_narrate_total"] = narrate_runs  # warm-ups included: must be 1
    report["speaker_encoder_runs_all"] = SpeakerEncoderRuns.count - enc_total0


def format_table(report: dict) -> str:
    head = f"{'variant':<12}{'frames':>8}{'frames/s':>10}{'x realtime':>12}{'first audio':>13}{'spk enc':>9}"
    head += f"{'peak MB':>9}{'vs plain':>10}"
    lines = [head, "-" * len(head)]
    for name, r in report["variants"].items():
        lines.append(
            f"{name:<12}{r['frames']:>8}{r['frames_per_s']:>10.2f}{r['x_realtime']:>12.3f}"
            f"{r['first_audio_ms']:>10.0f} ms{r['speaker_encoder_runs']:>9}{r['peak_memory_mb']:>9.0f}"
            f"{r['ratio_to_plain']:>9.2f}x"
        )
    return "\n".join(lines)
