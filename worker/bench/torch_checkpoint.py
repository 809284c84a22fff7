"""A checkpoint in the layout the official PyTorch package (``qwen-tts``) loads, from one narrate loads,
for ``narrate bench``'s torch peer. Standard library only (with numpy for ``read_tensors``): it runs
in narrate's process and in tests, never needs torch or mlx.

The weights are the same files in the same (published) layout: narrate's random-weight checkpoints
are written in it (worker/testkit/random_checkpoint), and qwen-tts reads every tensor of the model
and the codec decoder by the same names and shapes (checked: the speaker encoder's x-vector and the
codec's audio from the same inputs agree between mlx-audio and qwen-tts). So the weight files are
linked, never rewritten, and only what qwen-tts needs beside them differs:

- ``speech_tokenizer/preprocessor_config.json``: qwen-tts loads the codec's feature extractor
  (Mimi's, ``EncodecFeatureExtractor`` at 24 kHz) from it; mlx-audio needs none, so the random
  checkpoints have none;
- ``speech_tokenizer/config.json``: ``encoder_config.upsample_groups`` (the published configs set
  it to the encoder's hidden size; without it transformers' Mimi takes 512, which a smaller encoder
  cannot be split into).

One difference is left, and it is harmless here: where the codec encoder's hidden size equals its
quantizer's (the ``tiny`` size only), transformers' Mimi has no quantizer input and output
projections, so qwen-tts leaves those four tensors unused and encodes reference audio differently
from mlx-audio. The bench's torch variants clone in x-vector mode, which never uses those codes.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np

PREPROCESSOR = {
    "chunk_length_s": None,
    "feature_extractor_type": "EncodecFeatureExtractor",
    "feature_size": 1,
    "overlap": None,
    "padding_side": "right",
    "padding_value": 0.0,
    "return_attention_mask": True,
    "sampling_rate": 24000,
}
CODEC = "speech_tokenizer"
# safetensors dtypes as numpy ones (bf16 as its raw 16 bits: compared bit for bit)
DTYPES = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def _link(src: Path, dst: Path) -> None:
    """`dst` a symbolic link to `src` (weights stay where they are: gigabytes in the real sizes)."""
    dst.symlink_to(src.resolve())


def _codec_config(config: dict) -> dict:
    encoder = config.get("encoder_config")
    if isinstance(encoder, dict) and "upsample_groups" not in encoder and "hidden_size" in encoder:
        encoder["upsample_groups"] = encoder["hidden_size"]
    return config


def to_torch_layout(checkpoint: Path, out: Path) -> Path:
    """Write into `out` (a new folder) the checkpoint qwen-tts loads for `checkpoint`: every file
    linked but the codec's config (completed) and preprocessor config (added where missing)."""
    checkpoint = Path(checkpoint)
    out.mkdir(parents=True)
    for src in checkpoint.iterdir():
        if src.name != CODEC:
            _link(src, out / src.name)
    codec_in, codec_out = checkpoint / CODEC, out / CODEC
    codec_out.mkdir()
    for src in codec_in.iterdir():
        if src.name == "config.json":
            config = _codec_config(json.loads(src.read_text()))
            (codec_out / src.name).write_text(json.dumps(config, indent=2))
        else:
            _link(src, codec_out / src.name)
    if not (codec_out / "preprocessor_config.json").exists():
        (codec_out / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR, indent=2))
    return out


def read_tensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file as a numpy array (bf16 as uint16 bits), read without torch or mlx."""
    data = Path(path).read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    body = memoryview(data)[8 + size :]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        out[name] = np.frombuffer(body[start:end], dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])
    return out


def weight_files(checkpoint: Path) -> list[Path]:
    """The checkpoint's safetensors files, relative to it."""
    return sorted(p.relative_to(checkpoint) for p in Path(checkpoint).rglob("*.safetensors"))


def same_weights(source: Path, converted: Path) -> list[str]:
    """What of `source`'s weights `converted` lacks or changes (empty: every tensor is there, with
    the same shape and values)."""
    problems = []
    for rel in weight_files(source):
        if not os.path.exists(converted / rel):
            problems.append(f"{rel}: missing")
            continue
        theirs = read_tensors(converted / rel)
        for name, a in read_tensors(source / rel).items():
            b = theirs.get(name)
            if b is None:
                problems.append(f"{rel}: {name} missing")
            elif b.shape != a.shape or b.dtype != a.dtype or not np.array_equal(a, b):
                problems.append(f"{rel}: {name} differs")
    return problems
