"""The config files of a random-weight Qwen3-TTS checkpoint: config.json,
speech_tokenizer/config.json and generation_config.json, for the real 0.6B and 1.7B shapes and a
tiny one, of each model kind (Base, CustomVoice, VoiceDesign: ``KINDS``).

Where the real values come from:
- the model config: the published config.json of Qwen/Qwen3-TTS-12Hz-0.6B-Base; the 1.7B Base
  differs only in the talker's hidden size (2048), intermediate size (6144), the speaker
  encoder's output size (2048, which must equal the talker's hidden size) and
  ``tts_model_size`` ("1b7");
- the speech tokenizer: the published speech_tokenizer/config.json of the Qwen3-TTS 12 Hz
  tokenizer, shared by all Qwen3-TTS-12Hz models (its decoder values equal mlx-audio's
  Qwen3TTSTokenizerDecoderConfig defaults; the encoder's are mlx-audio's Mimi-style
  Qwen3TTSTokenizerEncoderConfig defaults, which match the published tensor shapes);
- the text tokenizer: the published Qwen3-TTS tokenizer (byte-level BPE, 151,643 base tokens,
  then 33 special tokens at ids 151643-151675 in QWEN_SPECIAL_TOKENS order);
- sampling: the published generation_config.json;
- the kinds: a CustomVoice config.json differs from a Base one in ``tts_model_type``
  ("custom_voice"), its speakers (``talker_config.spk_id``: name -> codec id, and
  ``spk_is_dialect``) and two dialect language ids; a VoiceDesign one in ``tts_model_type``
  ("voice_design") alone. Neither has speaker-encoder weights (mlx-audio builds the encoder for
  Base only). The speaker and dialect values are those of the published config.json of
  Qwen/Qwen3-TTS-12Hz-{0.6B,1.7B}-CustomVoice, as quoted alike by several independent projects
  (speaker ids in the control range 2861-3066 of the 3,072-id codec vocabulary); the checkpoint
  has four of its nine speakers (``CUSTOM_VOICE_SPEAKERS``), so tests also have a real name it lacks.

``tiny`` shrinks every size so that the real mlx-audio code runs on a CPU in seconds.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

SIZES = ("tiny", "0.6b", "1.7b")
# --kind names -> config.json's tts_model_type
KINDS = {"base": "base", "custom-voice": "custom_voice", "voice-design": "voice_design"}

# The Qwen special tokens in id order. In the real tokenizer the first (<|endoftext|>) has id
# 151643, the size of the BPE base vocabulary, and the last (<|audio_pad|>) 151675; the text
# embedding has 151936 rows (padding), i.e. 293 rows above the first special token.
QWEN_SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
    "<|audio_start|>",
    "<|audio_end|>",
    "<tts_pad>",
    "<tts_text_bos>",
    "<tts_text_eod>",
    "<tts_text_bos_single>",
    "<|audio_pad|>",
]
REAL_SPECIAL_BASE = 151643  # id of <|endoftext|>
REAL_TEXT_VOCAB = 151936  # talker_config.text_vocab_size
SPECIAL_HEADROOM = REAL_TEXT_VOCAB - REAL_SPECIAL_BASE  # 293 rows from the first special token up
TINY_TEXT_VOCAB = 4096

# Codec-side ids, the same in 0.6B and 1.7B.
CODEC_IDS: dict[str, Any] = {
    "codec_bos_id": 2149,
    "codec_eos_token_id": 2150,
    "codec_think_id": 2154,
    "codec_nothink_id": 2155,
    "codec_pad_id": 2148,
    "codec_think_bos_id": 2156,
    "codec_think_eos_id": 2157,
    "codec_language_id": {
        "chinese": 2055,
        "english": 2050,
        "german": 2053,
        "italian": 2070,
        "portuguese": 2071,
        "spanish": 2054,
        "japanese": 2058,
        "korean": 2064,
        "french": 2061,
        "russian": 2069,
    },
    "spk_id": {},
    "spk_is_dialect": {},
}

# CustomVoice only (see the module docstring for the source): preset speakers and their codec ids,
# which of them speak a dialect (the dialect's language id replaces "chinese" or "auto" for them),
# and the two dialect language ids. Four of the nine published speakers: the two English ones, a
# Chinese one and a dialect one. Left out (published ids): serena 3066, uncle_fu 3010,
# ono_anna 2873, sohee 2864, dylan 2878 (beijing_dialect).
CUSTOM_VOICE_SPEAKERS = {"ryan": 3061, "aiden": 2861, "vivian": 3065, "eric": 2875}
CUSTOM_VOICE_DIALECTS = {"eric": "sichuan_dialect"}
DIALECT_LANGUAGE_IDS = {"beijing_dialect": 2074, "sichuan_dialect": 2062}

GENERATION_CONFIG = {
    "do_sample": True,
    "repetition_penalty": 1.05,
    "temperature": 0.9,
    "top_p": 1.0,
    "top_k": 50,
    "subtalker_dosample": True,
    "subtalker_temperature": 0.9,
    "subtalker_top_p": 1.0,
    "subtalker_top_k": 50,
    "max_new_tokens": 8192,
}


@dataclass(frozen=True)
class Transformer:
    """The sizes of one transformer stack."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int


def talker_config(t: Transformer, mrope_section: list[int], text_hidden: int, text_vocab: int, cp: dict) -> dict:
    """talker_config; mrope_section sums to head_dim / 2 ([24, 20, 20] in the real models)."""
    cfg = {
        "attention_bias": False,
        "attention_dropout": 0,
        "head_dim": t.head_dim,
        "hidden_act": "silu",
        "hidden_size": t.hidden,
        "initializer_range": 0.02,
        "intermediate_size": t.intermediate,
        "max_position_embeddings": 32768,
        "model_type": "qwen3_tts_talker",
        "num_attention_heads": t.heads,
        "num_code_groups": 16,  # 16 codebooks per 12.5 Hz frame
        "num_hidden_layers": t.layers,
        "num_key_value_heads": t.kv_heads,
        "position_id_per_seconds": 13,
        "rms_norm_eps": 1e-06,
        "rope_scaling": {
            "interleaved": True,
            "mrope_section": mrope_section,
            "rope_type": "default",
            "type": "default",
        },
        "rope_theta": 1000000,
        "sliding_window": None,
        "text_hidden_size": text_hidden,  # 2048 in the real models
        "text_vocab_size": text_vocab,  # 151936 in the real models
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 3072,  # codec vocabulary: 2048 codes and 1024 control ids
        "code_predictor_config": cp,
    }
    cfg.update(copy.deepcopy(CODEC_IDS))
    return cfg


def code_predictor_config(t: Transformer) -> dict:
    """The real code predictor (both sizes): hidden 1024, intermediate 3072, 5 layers, 16 heads,
    8 key-value heads, head_dim 128."""
    return {
        "attention_bias": False,
        "attention_dropout": 0,
        "head_dim": t.head_dim,
        "hidden_act": "silu",
        "hidden_size": t.hidden,
        "initializer_range": 0.02,
        "intermediate_size": t.intermediate,
        "layer_types": ["full_attention"] * t.layers,
        "max_position_embeddings": 65536,
        "max_window_layers": 28,
        "model_type": "qwen3_tts_talker_code_predictor",
        "num_attention_heads": t.heads,
        "num_code_groups": 16,
        "num_hidden_layers": t.layers,
        "num_key_value_heads": t.kv_heads,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "sliding_window": None,
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 2048,
    }


def decoder_config(**shrink: Any) -> dict:
    """The speech tokenizer's decoder_config (real values; `shrink` overrides them for tiny)."""
    cfg = {
        "attention_bias": False,
        "attention_dropout": 0.0,
        "latent_dim": 1024,
        "codebook_dim": 512,
        "codebook_size": 2048,
        "decoder_dim": 1536,
        "hidden_act": "silu",
        "hidden_size": 512,
        "intermediate_size": 1024,
        "layer_scale_initial_scale": 0.01,
        "max_position_embeddings": 8000,
        "head_dim": 64,
        "num_attention_heads": 16,
        "num_hidden_layers": 8,
        "num_key_value_heads": 16,
        "num_quantizers": 16,
        "num_semantic_quantizers": 1,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000,
        "semantic_codebook_size": 4096,
        "sliding_window": 72,
        "upsample_rates": [8, 5, 4, 3],
        "upsampling_ratios": [2, 2],
        "vector_quantization_hidden_dimension": 512,
    }
    cfg.update(shrink)
    return cfg


def encoder_config(**shrink: Any) -> dict:
    """The speech tokenizer's encoder_config (Mimi). The published file spells the frame rate
    "_frame_rate"; mlx-audio reads "frame_rate" (default 12.5), so both are written."""
    cfg = {
        "_frame_rate": 12.5,
        "frame_rate": 12.5,
        "attention_bias": False,
        "attention_dropout": 0.0,
        "audio_channels": 1,
        "codebook_dim": 256,
        "codebook_size": 2048,
        "compress": 2,
        "dilation_growth_rate": 2,
        "dtype": "float32",
        "head_dim": 64,
        "hidden_act": "gelu",
        "hidden_size": 512,
        "intermediate_size": 2048,
        "kernel_size": 7,
        "last_kernel_size": 3,
        "layer_scale_initial_scale": 0.01,
        "max_position_embeddings": 8000,
        "norm_eps": 1e-05,
        "num_attention_heads": 8,
        "num_filters": 64,
        "num_hidden_layers": 8,
        "num_key_value_heads": 8,
        "num_quantizers": 32,
        "num_residual_layers": 1,
        "num_semantic_quantizers": 1,
        "pad_mode": "constant",
        "residual_kernel_size": 3,
        "rope_theta": 10000.0,
        "sampling_rate": 24000,
        "sliding_window": 250,
        "upsampling_ratios": [8, 6, 5, 4],
        "use_causal_conv": True,
        "use_conv_shortcut": False,
        "vector_quantization_hidden_dimension": 256,
    }
    cfg.update(shrink)
    return cfg


REAL_CODE_PREDICTOR = Transformer(hidden=1024, intermediate=3072, layers=5, heads=16, kv_heads=8, head_dim=128)

# The tiny speaker encoder (ECAPA-TDNN). Its channels stay above 64: mlx-audio's loader tells a
# PyTorch conv layout from an MLX one by the channel count.
TINY_SPEAKER_ENCODER = {
    "enc_dim": 128,  # must equal the talker's hidden size
    "sample_rate": 24000,
    "mel_dim": 128,  # fixed by mlx-audio's mel front end
    "enc_channels": [128, 128, 128, 128, 384],
    "enc_kernel_sizes": [5, 3, 3, 3, 1],
    "enc_dilations": [1, 2, 3, 4, 1],
    "enc_attention_channels": 128,
    "enc_res2net_scale": 8,
    "enc_se_channels": 128,
}
# The tiny codec decoder has no SEANet blocks (upsample_rates = []): four pre-upsample stages
# (transposed conv + ConvNeXt, 16 channels) do the whole 1920x upsampling, so decoding costs
# ~20 ms of CPU a frame, through the same mlx-audio code (streaming_step, chunked_decode).
# codebook_dim / 2 stays above 64 for the quantizer's 1x1 projections (the layout heuristic).
TINY_DECODER = decoder_config(
    latent_dim=16,
    codebook_dim=192,
    decoder_dim=16,
    hidden_size=64,
    intermediate_size=128,
    head_dim=32,
    num_attention_heads=2,
    num_key_value_heads=2,
    num_hidden_layers=1,
    upsample_rates=[],
    upsampling_ratios=[8, 8, 6, 5],
    vector_quantization_hidden_dimension=192,
)
TINY_ENCODER = encoder_config(
    codebook_dim=64,
    head_dim=32,
    hidden_size=64,
    intermediate_size=128,
    num_attention_heads=2,
    num_filters=8,
    num_hidden_layers=1,
    num_key_value_heads=2,
    num_quantizers=16,
    vector_quantization_hidden_dimension=64,
)


def model_type(kind: str) -> str:
    """config.json's ``tts_model_type`` for a kind (``base``, ``custom-voice`` or ``custom_voice``...)."""
    for name, value in KINDS.items():
        if kind in (name, value):
            return value
    raise ValueError(f"unknown kind {kind!r} (one of {', '.join(KINDS)})")


def apply_kind(config: dict, kind: str) -> None:
    """Make a Base config.json one of `kind`: its model type and, for CustomVoice, its speakers."""
    config["tts_model_type"] = model_type(kind)
    if config["tts_model_type"] == "custom_voice":
        talker = config["talker_config"]
        talker["spk_id"] = dict(CUSTOM_VOICE_SPEAKERS)
        talker["spk_is_dialect"] = {name: CUSTOM_VOICE_DIALECTS.get(name, False) for name in CUSTOM_VOICE_SPEAKERS}
        talker["codec_language_id"].update(DIALECT_LANGUAGE_IDS)


def build_configs(size: str, kind: str = "base") -> tuple[dict, dict, dict, int]:
    """(config.json, speech_tokenizer/config.json, generation_config.json, the id of the first
    special token) for a size and kind. config.json's ``assistant_token_id`` is filled in once the
    tokenizer is built. Every kind keeps ``speaker_encoder_config`` (mlx-audio reads it only for
    Base)."""
    if size in ("0.6b", "1.7b"):
        text_vocab = REAL_TEXT_VOCAB
        hidden, intermediate = (1024, 3072) if size == "0.6b" else (2048, 6144)
        talker = talker_config(
            Transformer(hidden, intermediate, layers=28, heads=16, kv_heads=8, head_dim=128),
            mrope_section=[24, 20, 20],
            text_hidden=2048,
            text_vocab=text_vocab,
            cp=code_predictor_config(REAL_CODE_PREDICTOR),
        )
        speaker: dict = {"enc_dim": hidden, "sample_rate": 24000}
        model_size = "0b6" if size == "0.6b" else "1b7"
        dec, enc = decoder_config(), encoder_config()
    elif size == "tiny":
        text_vocab = TINY_TEXT_VOCAB
        talker = talker_config(
            Transformer(hidden=128, intermediate=384, layers=4, heads=4, kv_heads=2, head_dim=32),
            mrope_section=[6, 5, 5],
            text_hidden=128,
            text_vocab=text_vocab,
            cp=code_predictor_config(Transformer(128, 384, layers=2, heads=4, kv_heads=2, head_dim=32)),
        )
        speaker = dict(TINY_SPEAKER_ENCODER)
        model_size = "tiny"
        dec, enc = TINY_DECODER, TINY_ENCODER
    else:
        raise ValueError(f"unknown size {size!r} (one of {', '.join(SIZES)})")

    special_base = text_vocab - SPECIAL_HEADROOM  # 151643 in the real models
    sid = {t: special_base + i for i, t in enumerate(QWEN_SPECIAL_TOKENS)}
    config = {
        "architectures": ["Qwen3TTSForConditionalGeneration"],
        # The real file has 77091 ("assistant" in the real vocabulary); mlx-audio does not read it.
        "assistant_token_id": None,
        "im_end_token_id": sid["<|im_end|>"],  # 151645 in the real models
        "im_start_token_id": sid["<|im_start|>"],  # 151644
        "tts_bos_token_id": sid["<tts_text_bos>"],  # 151672
        "tts_eos_token_id": sid["<tts_text_eod>"],  # 151673
        "tts_pad_token_id": sid["<tts_pad>"],  # 151671
        "model_type": "qwen3_tts",
        "tokenizer_type": "qwen3_tts_tokenizer_12hz",
        "tts_model_size": model_size,
        "tts_model_type": "base",
        "speaker_encoder_config": speaker,
        "talker_config": talker,
        "random_weights_checkpoint": {"size": size, "kind": model_type(kind)},  # not in the real file
    }
    apply_kind(config, kind)
    st_config = {
        "architectures": ["Qwen3TTSTokenizerV2Model"],
        "model_type": "qwen3_tts_tokenizer_12hz",
        "encoder_valid_num_quantizers": 16,
        "input_sample_rate": 24000,
        "output_sample_rate": 24000,
        "decode_upsample_rate": 1920,  # 24000 / 12.5
        "encode_downsample_rate": 1920,
        "decoder_config": copy.deepcopy(dec),
        "encoder_config": copy.deepcopy(enc),
    }
    return config, st_config, dict(GENERATION_CONFIG), special_base
