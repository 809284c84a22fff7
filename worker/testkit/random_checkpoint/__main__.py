"""``python -m narrate.worker.testkit.random_checkpoint OUT [--size tiny|0.6b|1.7b]
[--kind base|custom-voice|voice-design|asr|parakeet|aligner]`` (asr: the tiny Qwen3-ASR recognizer of the proof
pass; parakeet: a tiny Parakeet TDT recognizer, the family of its default English one; aligner: the tiny
Qwen3-ForcedAligner of word timings)"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from narrate.worker.testkit.random_checkpoint import KINDS, SIZES, write_checkpoint


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m narrate.worker.testkit.random_checkpoint",
        description="Write a random-weight Qwen3-TTS checkpoint (the audio it makes is noise).",
    )
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--size", choices=SIZES, default="tiny")
    ap.add_argument(
        "--kind",
        choices=[*KINDS, "asr", "parakeet", "aligner"],
        default="base",
        help="Base (clones samples), "
        "CustomVoice (preset speakers), VoiceDesign (voices from a description), asr: a tiny Qwen3-ASR recognizer "
        "(the proof pass), parakeet: a tiny Parakeet TDT recognizer (the proof pass's per-take path), or aligner: a "
        "tiny Qwen3-ForcedAligner (word timings)",
    )
    ap.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--codec-attention-scale",
        type=float,
        default=1.0,
        metavar="F",
        help="multiply the codec decoder transformer's query and key weights by F (sharp attention, as trained "
        "weights have: the parity tests' checkpoint whose decoder window matters)",
    )
    args = ap.parse_args(argv)
    t0 = time.time()
    if args.kind == "asr":
        from narrate.worker.testkit.random_checkpoint.asr import write_asr_checkpoint

        write_asr_checkpoint(args.out_dir, args.seed, args.dtype)
        print(f"wrote a tiny Qwen3-ASR checkpoint to {args.out_dir} in {time.time() - t0:.1f}s")
        return 0
    if args.kind == "parakeet":
        from narrate.worker.testkit.random_checkpoint.parakeet import write_parakeet_checkpoint

        write_parakeet_checkpoint(args.out_dir, args.seed, args.dtype)
        print(f"wrote a tiny Parakeet TDT checkpoint to {args.out_dir} in {time.time() - t0:.1f}s")
        return 0
    if args.kind == "aligner":
        from narrate.worker.testkit.random_checkpoint.aligner import write_aligner_checkpoint

        write_aligner_checkpoint(args.out_dir, args.seed, args.dtype)
        print(f"wrote a tiny Qwen3-ForcedAligner checkpoint to {args.out_dir} in {time.time() - t0:.1f}s")
        return 0
    write_checkpoint(
        args.out_dir, args.size, args.dtype, args.seed, kind=args.kind, codec_attention_scale=args.codec_attention_scale
    )
    print(f"wrote {args.size} {args.kind} checkpoint to {args.out_dir} in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
