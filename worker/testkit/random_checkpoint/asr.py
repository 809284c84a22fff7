"""A tiny random-weight Qwen3-ASR checkpoint (a speech recognizer, for the proof pass's tests) in the on-disk layout
of a ``Qwen/Qwen3-ASR-*`` snapshot, which mlx-audio's STT loader (``mlx_audio.stt.load``) reads::

    OUT/config.json                 model_type qwen3_asr, the model's sizes under thinker_config (audio_config,
                                    text_config) and the audio token ids, as published
    OUT/model.safetensors           "thinker."-prefixed tensors in the PyTorch layout (Conv2d weights O,I,H,W)
    OUT/tokenizer.json, tokenizer_config.json   the Qwen tokenizer of the TTS checkpoints (tokenizer.py): the same
                                    byte-level BPE, the Qwen special tokens (<|audio_start|>, <|audio_pad|>, ...)
    OUT/preprocessor_config.json    the WhisperFeatureExtractor of 128 mel bins at 16 kHz

Every size is shrunk (a 2-layer audio encoder of width 64, a 2-layer decoder of width 64, a 4,096-id vocabulary)
so that the real mlx-audio code transcribes a sentence on a CPU in well under a second. The weights are random:
what it hears is garbage, and it never ends a transcript on its own (every call runs to its token limit).

    python -m narrate.worker.testkit.random_checkpoint OUT --kind asr
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlx.core as mx
from mlx_audio.stt.models.qwen3_asr.config import ModelConfig
from mlx_audio.stt.models.qwen3_asr.qwen3_asr import Model
from narrate.worker.testkit.random_checkpoint.configs import QWEN_SPECIAL_TOKENS, SPECIAL_HEADROOM, TINY_TEXT_VOCAB
from narrate.worker.testkit.random_checkpoint.tokenizer import write_tokenizer
from narrate.worker.testkit.random_checkpoint.weights import parameter_shapes, random_param

MEL_BINS = 128  # Qwen3-ASR's feature extractor (Whisper's, 128 mel bins)
SUPPORT_LANGUAGES = [
    "Chinese",
    "English",
    "Cantonese",
    "Arabic",
    "German",
    "French",
    "Spanish",
    "Portuguese",
    "Indonesian",
    "Italian",
    "Korean",
    "Russian",
    "Thai",
    "Vietnamese",
    "Japanese",
]


def asr_config(special_base: int) -> dict:
    """config.json of the tiny recognizer: the published structure (thinker_config) with every size shrunk."""
    ids = {t: special_base + i for i, t in enumerate(QWEN_SPECIAL_TOKENS)}
    audio = {
        "num_mel_bins": MEL_BINS,
        "encoder_layers": 2,
        "encoder_attention_heads": 4,
        "encoder_ffn_dim": 128,
        "d_model": 64,
        "max_source_positions": 1500,
        "n_window": 50,
        "n_window_infer": 800,
        "conv_chunksize": 500,
        "downsample_hidden_size": 16,
        "output_dim": 64,
        "activation_function": "gelu",
        "scale_embedding": False,
    }
    text = {
        "model_type": "qwen3",
        "vocab_size": TINY_TEXT_VOCAB,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "hidden_act": "silu",
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True,
        "rope_theta": 1000000.0,
        "attention_bias": False,
    }
    return {
        "architectures": ["Qwen3ASRForConditionalGeneration"],
        "model_type": "qwen3_asr",
        "support_languages": SUPPORT_LANGUAGES,
        "thinker_config": {
            "model_type": "qwen3_asr_thinker",
            "audio_config": audio,
            "text_config": text,
            "audio_token_id": ids["<|audio_pad|>"],
            "audio_start_token_id": ids["<|audio_start|>"],
            "audio_end_token_id": ids["<|audio_end|>"],
        },
        "random_weights_checkpoint": {"note": "random weights: what it transcribes is garbage (narrate's tests)"},
    }


FEATURE_EXTRACTOR = {
    "feature_extractor_type": "WhisperFeatureExtractor",
    "feature_size": MEL_BINS,
    "sampling_rate": 16000,
    "hop_length": 160,
    "chunk_length": 30,
    "n_fft": 400,
    "n_samples": 480000,
    "nb_max_frames": 3000,
    "padding_side": "right",
    "padding_value": 0.0,
    "return_attention_mask": True,
    "dither": 0.0,
}


def _to_torch(name: str, v: mx.array) -> mx.array:
    """A parameter in the published (PyTorch) layout: Conv2d weights O,H,W,I -> O,I,H,W."""
    return v.transpose(0, 3, 1, 2) if "conv2d" in name and name.endswith("weight") and v.ndim == 4 else v


def write_asr_checkpoint(out: Path, seed: int = 0, dtype: str = "bfloat16", tokenizer_from: Path | None = None) -> Path:
    """Write the tiny random-weight Qwen3-ASR checkpoint into `out` (made if missing); returns `out`. The tensors
    are round-tripped through mlx-audio's ``sanitize`` first, so a change of its layout fails here. The tokenizer
    is trained here, or copied from the tiny TTS checkpoint `tokenizer_from` (the same one: it saves the training)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    special_base = TINY_TEXT_VOCAB - SPECIAL_HEADROOM
    if tokenizer_from is not None:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(Path(tokenizer_from) / name, out / name)
    else:
        write_tokenizer(out, special_base)
    config = asr_config(special_base)
    model = Model(ModelConfig.from_dict(config))  # parameters stay lazy
    shapes = parameter_shapes(model)
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
        raise RuntimeError(f"Qwen3-ASR sanitize round trip failed for {bad[:10]}")
    mx.save_safetensors(str(out / "model.safetensors"), torch_params, metadata={"format": "pt"})
    config["random_weights_checkpoint"].update({"seed": seed, "dtype": dtype})
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / "preprocessor_config.json").write_text(json.dumps(FEATURE_EXTRACTOR, indent=2))
    return out
