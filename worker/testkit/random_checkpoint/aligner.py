"""A tiny random-weight Qwen3-ForcedAligner checkpoint (word timings, for `--word-timings` in the tests) in the
on-disk layout of a ``Qwen/Qwen3-ForcedAligner-*`` snapshot, which mlx-audio's STT loader (``mlx_audio.stt.load``)
reads as a Qwen3-ASR checkpoint whose ``thinker_config`` says ``qwen3_forced_aligner``::

    OUT/config.json                 model_type qwen3_asr; thinker_config: model_type qwen3_forced_aligner, the
                                    sizes (audio_config, text_config), the audio token ids and classify_num (the
                                    timestamp classes of its head); timestamp_token_id and timestamp_segment_time
                                    (80 ms a class) at the top, as published
    OUT/model.safetensors           "thinker."-prefixed tensors in the PyTorch layout, with ``lm_head.weight``
                                    (classify_num rows: what tells mlx-audio's sanitize it is an aligner)
    OUT/tokenizer.json, tokenizer_config.json   the Qwen tokenizer of the TTS checkpoints with ``<timestamp>``
                                    added right after its special tokens (the tokenizers library numbers added
                                    tokens on from the vocabulary, so the real id's gap cannot be kept)
    OUT/preprocessor_config.json    the WhisperFeatureExtractor of 128 mel bins at 16 kHz

The sizes are the tiny recognizer's (asr.py). The head has CLASSES timestamp classes, not the published 5,000, so
that random weights give times within the half-second takes of the tests (5,000 classes of 80 ms reach 400 s, which
the job would rightly refuse as garbage): the timings are meaningless, the code that makes and carries them is real.

    python -m narrate.worker.testkit.random_checkpoint OUT --kind aligner
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlx.core as mx
from mlx_audio.stt.models.qwen3_asr.config import ModelConfig
from mlx_audio.stt.models.qwen3_asr.qwen3_asr import Model
from mlx_audio.stt.models.qwen3_asr.qwen3_forced_aligner import ForcedAlignerConfig
from narrate.worker.testkit.random_checkpoint.asr import FEATURE_EXTRACTOR, _to_torch, asr_config
from narrate.worker.testkit.random_checkpoint.configs import QWEN_SPECIAL_TOKENS, SPECIAL_HEADROOM, TINY_TEXT_VOCAB
from narrate.worker.testkit.random_checkpoint.tokenizer import write_tokenizer
from narrate.worker.testkit.random_checkpoint.weights import parameter_shapes, random_param

TIMESTAMP = "<timestamp>"
CLASSES = 6  # timestamp classes of the tiny head: 0-400 ms
SEGMENT_MS = 80.0  # a class, as published


def aligner_config(special_base: int) -> dict:
    """config.json of the tiny aligner: the recognizer's sizes, the aligner's type, head and timestamp token."""
    config = asr_config(special_base)
    config["architectures"] = ["Qwen3ASRForConditionalGeneration"]
    thinker = config["thinker_config"]
    thinker["model_type"] = "qwen3_forced_aligner"
    thinker["classify_num"] = CLASSES
    thinker["text_config"] = {**thinker["text_config"], "tie_word_embeddings": False}  # its head is its own
    config["timestamp_token_id"] = special_base + len(QWEN_SPECIAL_TOKENS)
    config["timestamp_segment_time"] = SEGMENT_MS
    config["random_weights_checkpoint"] = {"note": "random weights: its word timings are meaningless (narrate's tests)"}
    return config


def _add_timestamp_token(out: Path, token_id: int) -> None:
    """``<timestamp>`` as a special token at `token_id` in tokenizer.json and tokenizer_config.json."""
    spec = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    entry = {
        "id": token_id,
        "content": TIMESTAMP,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": True,
    }
    spec["added_tokens"] = [t for t in spec["added_tokens"] if t["content"] != TIMESTAMP] + [entry]
    (out / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False), encoding="utf-8")
    cfg = json.loads((out / "tokenizer_config.json").read_text(encoding="utf-8"))
    cfg["added_tokens_decoder"][str(token_id)] = {k: v for k, v in entry.items() if k != "id"}
    (out / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")


def write_aligner_checkpoint(
    out: Path, seed: int = 0, dtype: str = "bfloat16", tokenizer_from: Path | None = None
) -> Path:
    """Write the tiny random-weight Qwen3-ForcedAligner checkpoint into `out` (made if missing); returns `out`.
    The tensors are round-tripped through mlx-audio's ``sanitize`` first (a change of its layout fails here). The
    tokenizer is trained here, or copied from the tiny TTS checkpoint `tokenizer_from`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    special_base = TINY_TEXT_VOCAB - SPECIAL_HEADROOM
    if tokenizer_from is not None:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(Path(tokenizer_from) / name, out / name)
    else:
        write_tokenizer(out, special_base)
    config = aligner_config(special_base)
    _add_timestamp_token(out, config["timestamp_token_id"])
    parsed = ModelConfig.from_dict(config)
    if not isinstance(parsed, ForcedAlignerConfig):
        raise RuntimeError("mlx-audio no longer reads a qwen3_forced_aligner thinker_config as a forced aligner")
    model = Model(parsed)  # parameters stay lazy
    shapes = parameter_shapes(model._model)
    del model
    kind = getattr(mx, dtype)
    mlx_params = {}
    for name, shape in shapes.items():
        mlx_params[name] = (
            mx.ones(shape, kind) if name.endswith("ln_post.weight") else random_param(name, shape, kind, seed)
        )
    torch_params = {f"thinker.{name}": _to_torch(name, v) for name, v in mlx_params.items()}
    back = Model.sanitize(dict(torch_params))
    bad = [k for k in mlx_params if k not in back or back[k].shape != mlx_params[k].shape]
    if bad or set(back) != set(mlx_params):
        raise RuntimeError(f"Qwen3-ForcedAligner sanitize round trip failed for {bad[:10]}")
    mx.save_safetensors(str(out / "model.safetensors"), torch_params, metadata={"format": "pt"})
    config["random_weights_checkpoint"].update({"seed": seed, "dtype": dtype})
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / "preprocessor_config.json").write_text(json.dumps(FEATURE_EXTRACTOR, indent=2))
    return out
