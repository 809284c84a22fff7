"""The plain mlx-audio loop of tests/bench/e2e_bench.py, as its own process: what a script without narrate
does with the same checkpoint, voice sample and sentences.

    python tests/bench/e2e_plain.py --model DIR --voice SAMPLE.wav --plan PLAN.json -o OUT.mp3 --ffmpeg EXE [--openblas]

PLAN.json (written by e2e_bench.py from narrate's own planning) holds each sentence's spoken text,
language, seed and frame budget in reading order, and narrate's ffmpeg muxer and codec arguments for the
output's format. The model is loaded with mlx-audio, EOS is disabled the way `narrate bench` disables it
(an id the sampler never produces: every sentence runs to its budget), then for each sentence
`model.generate(...)` with the sample as ``ref_audio`` (the speaker encoder runs for every sentence),
streamed as `narrate bench`'s plain loop streams it; the audio is concatenated and piped into one ffmpeg
encode. Prints one JSON line: the seconds of each phase and the frames made. `--openblas`: MLX's float32
products by the system OpenBLAS, as narrate.worker loads it on Linux (narrate.worker.blas): the same BLAS
on both sides."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

T0 = time.monotonic()  # before the heavy imports: they count

if "--openblas" in sys.argv:  # the system OpenBLAS ahead of MLX's bundled BLAS, as narrate.worker does
    import narrate.worker  # noqa: E402, F401

import mlx.core as mx  # noqa: E402
import numpy as np  # noqa: E402
from mlx_audio.tts.utils import load_model  # noqa: E402

STREAM_INTERVAL_S = 0.32  # as narrate bench's plain loop (worker.bench.runner.STREAM_INTERVAL_S)
SAMPLE_RATE = 24_000


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--voice", required=True)
    ap.add_argument("--plan", required=True)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--ffmpeg", default="ffmpeg")
    ap.add_argument("--openblas", action="store_true", help="MLX's float32 products by the system OpenBLAS")
    a = ap.parse_args()
    plan = json.loads(open(a.plan, encoding="utf-8").read())
    t_imported = time.monotonic()
    model = load_model(a.model)
    tc = model.config.talker_config
    tc.codec_eos_token_id = tc.vocab_size  # EOS never sampled: every sentence runs to its budget
    t_loaded = time.monotonic()
    pieces, frames, first = [], [], None
    for s in plan["sentences"]:
        mx.random.seed(s["seed"])
        made = 0
        for r in model.generate(
            text=s["text"],
            ref_audio=a.voice,
            lang_code=s["language"],
            max_tokens=s["budget"],
            stream=True,
            streaming_interval=STREAM_INTERVAL_S,
            verbose=False,
        ):
            if first is None:
                first = time.monotonic()
            pieces.append(np.asarray(r.audio, dtype=np.float32))
            made += int(r.token_count)
        frames.append(made)
    t_synth = time.monotonic()
    muxer, codec = plan["format"]  # narrate's muxer and codec arguments for the output's extension
    pcm = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
    subprocess.run(
        [
            a.ffmpeg,
            "-hide_banner",
            "-nostdin",
            "-v",
            "error",
            "-y",
            "-f",
            "f32le",
            "-ar",
            str(SAMPLE_RATE),
            "-ac",
            "1",
            "-i",
            "pipe:0",
            *codec,
            "-f",
            muxer,
            a.output,
        ],
        input=pcm.tobytes(),
        check=True,
    )
    t_end = time.monotonic()
    print(
        json.dumps(
            {
                "imports_s": round(t_imported - T0, 3),
                "load_s": round(t_loaded - t_imported, 3),
                "first_audio_s": round((first or t_synth) - T0, 3),
                "synthesis_s": round(t_synth - t_loaded, 3),
                "encode_s": round(t_end - t_synth, 3),
                "frames": frames,
                "audio_s": round(pcm.size / SAMPLE_RATE, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
