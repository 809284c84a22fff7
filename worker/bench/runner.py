"""``narrate bench``: the plain mlx-audio loop against narrate's engine, side by side, in one process.

On the same sentences (a workload: bench_workloads.py), voice and loaded checkpoint, after a
warm-up of every variant:

  plain         mlx-audio ``generate`` per sentence with ``ref_audio`` (a wav path), the way a
                script would call it: the speaker encoder runs for every sentence
  mlx-batch-N   mlx-audio's own ``batch_generate``: N sentences in reading order per call, one
                shared reference audio and transcript (its voice-cloning batch mode), the call's
                longest budget as its ``max_tokens``; frames past a row's own budget are waste
  static-N      narrate's batched engine, static batches of N rows: a batch runs until its
                longest row ends, finished rows are still computed (narrate before continuous
                batching, with today's streaming codec)
  continuous-N  narrate's job path: N slots, a finished row leaves at once and the next sentence
                takes its slot

With ``--voice-kind preset``, also static-N-preset and continuous-N-preset: the same narrate
variants (sentences, seeds, budgets, batch sizes) with a preset speaker (``PRESET_SPEAKER``) on a
CustomVoice checkpoint of the same size (a random-weight one, built as the Base one is), beside
the cloned rows; ``preset_vs_clone`` gives each one's frames/s over its cloned twin's.

With ``--voices K`` (K > 1), also static-N-Kvoices and continuous-N-Kvoices: the same narrate
variants with the sentences' voices assigned round-robin from K cloned voices (K synthetic samples,
K x-vectors: bench_voices.py), through the job path of a cast (``MlxEngine.synthesize`` with a voice per
label), so rows of K voices share every batch; ``multi_vs_one`` gives each one's frames/s over its
one-voice twin's.

Two peers, each on the same sentences and frame budgets, EOS disabled, warmed up as the rest:

  mlx-continuous-N  mlx-audio's own continuous batching (``Qwen3TTSBatchSession``, its server's
                    engine: mlx_continuous.py), N slots, each request stopped at its own budget.
                    It refuses reference audio, so it speaks the preset speaker on the CustomVoice
                    checkpoint (asking for it brings ``--voice-kind preset``'s checkpoint and
                    narrate's preset rows); ``vs_mlx_continuous`` gives continuous-N-preset's
                    frames/s over its own, by N
  torch-plain,      the official PyTorch package ``qwen-tts`` in a separate Python
  torch-batch-N     (``--torch-python``; torch is no dependency of narrate): its
                    ``generate_voice_clone`` one sentence a call, and N sentences a call, in
                    x-vector mode (torch_peer.py, torch_variants.py); skipped with a reason without
                    that Python; ``vs_torch_batch`` and ``vs_torch_plain`` give continuous-N's
                    frames/s over torch-batch-N's and torch-plain's, by N

EOS is disabled (unless --allow-eos), so every sentence generates exactly its budget and all
variants do the same work. Reported per variant: codec frames/s, audio seconds per wall second
(x realtime), time to first audio, idle-row waste (% of the rows a step computed that had already
finished), speaker-encoder runs, MLX peak memory, the frames/s ratio to plain, the voice kind
of its rows (clone or preset) and how many voices its rows speak. Compare ratios, not single
times: shared machines are noisy.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import mlx.core as mx
from narrate.jobs.book.synthesis import Sentence, VoiceEmbedding
from narrate.jobs.errors import BadInput
from narrate.worker import blas
from narrate.worker.bench import stages
from narrate.worker.bench.bench_voices import MAX_VOICES, clone_embeddings, preset_voice, voice_files
from narrate.worker.bench.measure import Variant, run_variants, summarize, voices_suffix
from narrate.worker.bench.mlx_continuous import mlx_continuous
from narrate.worker.bench.torch_variants import check, run_torch, variant_names
from narrate.worker.bench.workloads import Item
from narrate.worker.engine.decode_loop import StageClock
from narrate.worker.engine.mlx_compat import shadow
from narrate.worker.engine.mlx_engine import MlxEngine
from narrate.worker.engine.models import LoadedModel, load, resolve
from narrate.worker.engine.row_voices import RowVoice
from narrate.worker.engine.voice_cache import SpeakerEncoderRuns

# mlx-audio's generate and batch_generate (the plain and mlx-batch variants) stream a chunk every
# 4 codec frames (12.5 a second).
STREAM_INTERVAL_S = 0.32
# batch_generate clones a voice in context: it needs the reference audio's transcript. The bench
# voice is a synthetic tone (random weights do not care what it says); this is what it "says".
REFERENCE_TRANSCRIPT = "This is the voice that reads the book aloud."


# mlx-batch: many minutes at 16 rows on a CPU; the peers (mlx-continuous, torch) only when asked for
FAMILIES = ("plain", "mlx-batch", "static", "continuous", "mlx-continuous", "torch")
DEFAULT_FAMILIES = FAMILIES[:4]


def parse_families(text: str) -> tuple[str, ...]:
    """`--variants`: a comma-separated choice of FAMILIES (plain always runs: it is the baseline)."""
    families = tuple(v.strip() for v in text.split(",") if v.strip())
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown or not families:
        raise BadInput(f"--variants {text!r}: choose from {', '.join(FAMILIES)}, comma-separated")
    return families


class Bench:
    def __init__(
        self, loaded: LoadedModel, items: list[Item], voice_paths: list[Path], preset: LoadedModel | None = None
    ):
        self.loaded = loaded
        self.model = loaded.model
        self.items = items
        self.voice_paths = voice_paths  # --voices N samples; the first is the one voice of every other variant
        self.voice_path = voice_paths[0]
        self.preset = preset  # the CustomVoice model of the preset variants
        self.embeddings: list[mx.array] = []
        self.steps: list[tuple[int, int]] = []  # the last narrate run's (rows computed, of them done) per step
        self.padding: list[int] = []  # the last narrate run's padded code-predictor rows per step
        self.batch_voices: list[int] = []  # the last narrate run's distinct voices per batch (engine group)

    def plain(self, items: list[Item] | None = None) -> Iterator[int]:
        for i, it in enumerate(items or self.items):
            mx.random.seed(i)
            for r in self.model.generate(
                text=it.text,
                ref_audio=str(self.voice_path),
                max_tokens=it.budget,
                stream=True,
                streaming_interval=STREAM_INTERVAL_S,
                verbose=False,
            ):
                yield int(r.token_count)

    def mlx_batch(self, size: int, items: list[Item] | None = None) -> Iterator[int]:
        """mlx-audio's ``batch_generate``, `size` sentences a call; yields each chunk's frames
        within its row's budget and records the rows computed (every row runs to the call's
        longest budget: EOS is disabled) as self.steps."""
        items = items or self.items
        self.steps = []
        for start in range(0, len(items), size):
            group = items[start : start + size]
            budgets = [it.budget for it in group]
            made = [0] * len(group)
            mx.random.seed(start)
            for r in self.model.batch_generate(
                [it.text for it in group],
                ref_audio=str(self.voice_path),
                ref_text=REFERENCE_TRANSCRIPT,
                max_tokens=max(budgets),
                stream=True,
                streaming_interval=STREAM_INTERVAL_S,
                verbose=False,
            ):
                i = r.sequence_idx
                useful = max(0, min(int(r.token_count), budgets[i] - made[i]))
                made[i] += int(r.token_count)
                if useful:
                    yield useful
            self.steps.append((sum(made), sum(m - b for m, b in zip(made, budgets, strict=True))))

    def _voices(self) -> list[mx.array]:
        if not self.embeddings:  # computed once per benchmark run, like the worker's cache
            self.embeddings = clone_embeddings(self.loaded, self.voice_paths)
        return self.embeddings

    def narrate(
        self, size: int, continuous: bool, items: list[Item] | None = None, preset: bool = False, voices: int = 1
    ) -> Iterator[int]:
        """narrate's engine; `preset`: on the CustomVoice model, every row the preset speaker;
        `voices` > 1: sentence i in cloned voice i % `voices`, as a cast (one voice per label)."""
        sentences = [
            Sentence(i, it.text, 1000 + i, it.budget, voice=f"voice{i % voices}")
            for i, it in enumerate(items or self.items)
        ]
        loaded = self.preset if preset else self.loaded
        assert loaded is not None
        engine = MlxEngine(loaded, batch_size=size, runaway_retries=0, continuous=continuous)
        engine.warm_up()  # compiled shapes: at the first warm-up run, never while measuring
        groups: list[list[int]] = []
        if preset:
            chunks = engine.batched(sentences, preset_voice(loaded), size, groups.append)
        elif voices > 1:  # the job path of a cast: rows of every voice in one batch
            embeddings = self._voices()[:voices]
            cast = {f"voice{k}": VoiceEmbedding(RowVoice.clone(e), True, 0) for k, e in enumerate(embeddings)}
            chunks = engine.synthesize(sentences, cast, groups.append)
        else:
            chunks = engine.batched(sentences, self._voices()[0], size, groups.append)
        for c in chunks:
            yield c.frames
        self.batch_voices = [len({i % voices for i in g}) for g in groups]
        self.steps = engine.last_loop.computed if engine.last_loop else []
        self.padding = engine.last_loop.padding if engine.last_loop else []

    def stage_clock(self, size: int) -> StageClock:
        """One more continuous-`size` run with every stage of the decode loop evaluated and timed (stages.py)."""
        clock = StageClock()
        sentences = [Sentence(i, it.text, 1000 + i, it.budget) for i, it in enumerate(self.items)]
        engine = MlxEngine(self.loaded, batch_size=size, runaway_retries=0, continuous=True, clock=clock)
        engine.warm_up()
        for _ in engine.batched(sentences, self._voices()[0], size):
            pass
        return clock

    def mlx_continuous(self, size: int, items: list[Item] | None = None) -> Iterator[int]:
        """mlx-audio's continuous-batching session of `size` slots, the preset speaker on the CustomVoice model."""
        assert self.preset is not None
        items = items or self.items
        speaker = preset_voice(self.preset).speaker
        assert speaker is not None  # a preset names its speaker
        yield from mlx_continuous(self.preset.model, items, size, speaker)
        self.steps = [(sum(it.budget for it in items), 0)]  # a request leaves at its budget: no idle rows


@contextlib.contextmanager
def counting_mlx_audio_runs(model: Any) -> Iterator[None]:
    """While active, mlx-audio's own speaker-encoder runs (its ``generate`` and ``batch_generate`` call
    the model's ``extract_speaker_embedding`` once per sentence or row) are added to
    SpeakerEncoderRuns. narrate's engine shadows that method with the cached voice (no run), and
    narrate's own run (``speaker_embedding``, the class method) is counted where it happens."""
    inner = model.extract_speaker_embedding

    def counted(*args: Any, **kwargs: Any) -> Any:
        SpeakerEncoderRuns.add()
        return inner(*args, **kwargs)

    with shadow(model, "extract_speaker_embedding", counted):
        yield


def default_json(home: Path) -> Path:
    """Where the results go without --json: $NARRATE_HOME/bench/<local time>.json."""
    return home / "bench" / f"{time.strftime('%Y%m%d-%H%M%S')}.json"


def _load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the system has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _load_no_eos(checkpoint: Path, allow_eos: bool, quant: str | None = None) -> LoadedModel:
    loaded = load(resolve(str(checkpoint), quant))
    if not allow_eos:  # an id the sampler can never produce: every sentence runs to its budget
        tc = loaded.model.config.talker_config
        tc.codec_eos_token_id = tc.vocab_size
    return loaded


def run_bench(
    checkpoint: Path,
    items: list[Item],
    workload_name: str,
    batch_sizes: tuple[int, ...] = (4, 8, 16),
    warmup_frames: int = 4,
    allow_eos: bool = False,
    out_json: Path | None = None,
    log: Callable[[str], None] = print,
    families: tuple[str, ...] = DEFAULT_FAMILIES,
    preset: Path | None = None,
    voices: int = 1,
    torch_python: Path | None = None,
    torch_dtype: str = "auto",
    torch_threads: int = 0,
    quant: str | None = None,
) -> dict:
    """Every variant on `checkpoint` (a Base model), loaded as `quant` (None: this host's default, as a job's); with
    `preset` (a CustomVoice checkpoint of the same size), narrate's variants again with a preset speaker
    (``--voice-kind preset``), and mlx-audio's continuous session if asked for; with `voices` > 1, again with rows of
    that many cloned voices (``--voices``); with the torch family, qwen-tts run by `torch_python`."""
    narrates = {"static", "continuous"}
    for asked, option in ((preset is not None, "--voice-kind preset"), (voices > 1, "--voices")):
        if asked and not (narrates | ({"mlx-continuous"} if preset is not None else set())) & set(families):
            raise BadInput(f"{option} compares narrate's batches: add static or continuous to --variants")
    if "mlx-continuous" in families and preset is None:
        raise BadInput(
            "mlx-continuous speaks a preset speaker: it needs a CustomVoice checkpoint (--voice-kind preset)"
        )
    if not 1 <= voices <= MAX_VOICES:
        raise BadInput(f"--voices {voices}: give 1 to {MAX_VOICES}")
    t0 = time.perf_counter()
    loaded = _load_no_eos(checkpoint, allow_eos, quant)
    load_s = time.perf_counter() - t0
    presets = _load_no_eos(preset, allow_eos, quant) if preset is not None else None
    if presets is not None and presets.kind != "custom_voice":
        raise BadInput(f"--voice-kind preset needs a CustomVoice checkpoint; {preset} is {presets.kind}")
    cfg = loaded.model.config.talker_config
    budgets = [it.budget for it in items]
    report: dict = {
        "checkpoint": checkpoint.name,
        "talker": {"hidden_size": cfg.hidden_size, "layers": cfg.num_hidden_layers},
        "quant": loaded.resolved.quant,  # every mlx variant's (the plain loop's too): --quant, else the host's default
        "device": str(mx.default_device()),
        "platform": platform.platform(),
        "mlx": mx.__version__,  # type: ignore[attr-defined]  # not in mlx's type stubs
        "blas": blas.loaded or "mlx's own",  # float32 products: the system OpenBLAS where loaded (worker/blas.py)
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "workload": workload_name,
        "sentences": len(items),
        "budgets": {"total": sum(budgets), "min": min(budgets), "max": max(budgets), "each": budgets},
        "eos": "allowed" if allow_eos else "disabled (every sentence generates exactly its budget)",
        "load_s": round(load_s, 2),
        "voice_kind": "clone" if presets is None else "preset",
        "voices": voices,
        "load_average": {"start": _load_average()},  # other processes' share of the CPU: ratios move with it
        "variants": {},
    }
    if presets is not None:
        assert preset is not None
        report["preset"] = {"checkpoint": preset.name, "speaker": preset_voice(presets).speaker}
    torch = None
    if "torch" in families:  # checked first: a missing torch says so before minutes of measuring
        torch, why = check(torch_python)
        report["torch"] = {**(torch or {}), "python": str(torch_python) if torch_python else None}
        if why:
            report["skipped"] = {name: why for name in variant_names(batch_sizes)}
            log(f"torch variants skipped: {why}")
    if out_json:
        out_json.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="narrate-bench-") as tmp:  # removed whatever happens (Ctrl-C too)
        bench = Bench(loaded, items, voice_files(Path(tmp), voices), presets)
        log(f"loaded {checkpoint} in {load_s:.1f}s on {report['device']}; warming up every variant")
        with counting_mlx_audio_runs(loaded.model):
            runs = run_variants(bench, report, _variants(bench, batch_sizes, families), warmup_frames, out_json, log)
        if "continuous" in families:  # where a frame's time goes, stage by stage (stages.py)
            size = max(batch_sizes)
            log(f"stage profile: continuous-{size} once more, each stage of the decode loop on its own")
            found = stages.profile(bench.stage_clock(size), stages.gflop_per_frame(loaded.model))
            report["stages"] = {"variant": f"continuous-{size}", **found}
        if torch and torch_python:  # after narrate's variants: the two never share the CPU
            settings = (allow_eos, torch_dtype, torch_threads)
            args = (bench.voice_path, items, batch_sizes, warmup_frames, *settings, Path(tmp), log)
            peer = run_torch(torch_python, checkpoint, *args)
            if "skipped" in peer:
                report["skipped"] = {name: peer["skipped"] for name in variant_names(batch_sizes)}
                log(f"torch variants skipped: {peer['skipped']}")
            else:
                report["variants"].update(peer.pop("variants"))
                report["torch"].update(peer)
    summarize(report, runs, presets is not None, voices, batch_sizes)
    report["load_average"]["end"] = _load_average()
    report["wall_s"] = round(time.perf_counter() - t0, 1)
    if out_json:
        out_json.write_text(json.dumps(report, indent=2))
    return report


def _variants(bench: Bench, batch_sizes: tuple[int, ...], families: tuple[str, ...] = FAMILIES) -> list[Variant]:
    """(name, rows, run) for plain (always: the baseline), and mlx-batch-N, static-N, continuous-N,
    mlx-continuous-N of the families asked for (each narrate one followed by its -preset twin if the
    bench has a CustomVoice model, and its -Kvoices twin if it has K > 1 voices). The torch ones run
    in their own process (torch_variants.py)."""
    out: list[Variant] = [("plain", 1, bench.plain)]
    for n in batch_sizes if "mlx-batch" in families else ():
        out.append((f"mlx-batch-{n}", n, lambda items=None, n=n: bench.mlx_batch(n, items)))
    many = len(bench.voice_paths)
    twins: list[tuple[str, dict[str, Any]]] = [("", {})]  # (name suffix, narrate's keyword arguments)
    twins += [("-preset", {"preset": True})] if bench.preset is not None else []
    twins += [(voices_suffix(many), {"voices": many})] if many > 1 else []
    for n in batch_sizes:
        for family, continuous in (("static", False), ("continuous", True)):
            for suffix, kw in twins if family in families else ():
                out.append((f"{family}-{n}{suffix}", n, partial(bench.narrate, n, continuous, **kw)))
    for n in batch_sizes if "mlx-continuous" in families and bench.preset is not None else ():
        out.append((f"mlx-continuous-{n}", n, partial(bench.mlx_continuous, n)))
    return out
