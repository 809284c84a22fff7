"""Random-weight Qwen3-TTS *Base* checkpoints in the exact on-disk layout mlx-audio loads.

Used by the tests (a tiny model that runs the real mlx-audio code on CPU in seconds)
and by ``narrate bench`` (random weights in the real 0.6B / 1.7B shapes), because the
real weights are gigabytes and tests must never reach the Hugging Face hub.

Layout written (the one ``mlx_audio.tts.utils.load_model`` accepts for a
``Qwen/Qwen3-TTS-12Hz-*-Base`` snapshot)::

    OUT/config.json, generation_config.json, model.safetensors (bf16 by default),
    OUT/tokenizer.json, tokenizer_config.json   (a locally trained byte-level BPE with
                                                 the Qwen special tokens at their real ids)
    OUT/speech_tokenizer/config.json, model.safetensors   (codec, float32)

Sizes: ``tiny`` (4 talker layers, hidden 128; a codec decoder without SEANet blocks so
decoding costs ~20 ms a frame on CPU), ``0.6b`` and ``1.7b`` (the exact tensor shapes of
Qwen3-TTS-12Hz-0.6B-Base / 1.7B-Base). Weights are a pure function of size, dtype and seed.
Config values are the published ones (Qwen3-TTS 0.6B/1.7B Base config.json, speech
tokenizer config, generation_config.json); tiny shrinks them.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import time
import zlib
from pathlib import Path

# --------------------------------------------------------------------------
# Configs
# --------------------------------------------------------------------------

# Qwen special tokens in id order [TOK].  In the real tokenizer the first one
# (<|endoftext|>) has id 151643 = size of the BPE base vocabulary and the last
# one (<|audio_pad|>) has id 151675; the text embedding has 151936 rows
# (padding), i.e. 293 rows above the first special token.
QWEN_SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
    "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
    "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>", "<|audio_start|>", "<|audio_end|>", "<tts_pad>",
    "<tts_text_bos>", "<tts_text_eod>", "<tts_text_bos_single>", "<|audio_pad|>",
]  # fmt: skip
assert len(QWEN_SPECIAL_TOKENS) == 33
REAL_SPECIAL_BASE = 151643  # [TOK] id of <|endoftext|>
REAL_TEXT_VOCAB = 151936  # [HF06] talker_config.text_vocab_size
SPECIAL_HEADROOM = REAL_TEXT_VOCAB - REAL_SPECIAL_BASE  # 293

# Qwen2 pre-tokenizer regex [TOK] (the "native" one; see OQ11 for the
# fix_mistral_regex variant the official PyTorch loader happens to use).
QWEN2_PRETOKENIZE_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# Codec-side ids (shared by 0.6B and 1.7B) [HF06].
CODEC_IDS = dict(
    codec_bos_id=2149,
    codec_eos_token_id=2150,
    codec_think_id=2154,
    codec_nothink_id=2155,
    codec_pad_id=2148,
    codec_think_bos_id=2156,
    codec_think_eos_id=2157,
    codec_language_id={
        "chinese": 2055, "english": 2050, "german": 2053, "italian": 2070,
        "portuguese": 2071, "spanish": 2054, "japanese": 2058, "korean": 2064,
        "french": 2061, "russian": 2069,
    },
    spk_id={},
    spk_is_dialect={},
)  # fmt: skip


def _talker_config(
    hidden, intermediate, layers, heads, kv_heads, head_dim, mrope_section,
    text_hidden, text_vocab, cp,
):  # fmt: skip
    cfg = {
        # --- values below: [HF06] for 0.6B; identical for 1.7B except the
        # --- sizes passed in ([HF17]); shrunk for tiny.
        "attention_bias": False,
        "attention_dropout": 0,
        "head_dim": head_dim,
        "hidden_act": "silu",
        "hidden_size": hidden,
        "initializer_range": 0.02,
        "intermediate_size": intermediate,
        "max_position_embeddings": 32768,
        "model_type": "qwen3_tts_talker",
        "num_attention_heads": heads,
        "num_code_groups": 16,  # 16 codebooks per 12.5 Hz frame
        "num_hidden_layers": layers,
        "num_key_value_heads": kv_heads,
        "position_id_per_seconds": 13,
        "rms_norm_eps": 1e-06,
        "rope_scaling": {
            "interleaved": True,
            "mrope_section": mrope_section,  # [24,20,20] real (sum = head_dim/2)
            "rope_type": "default",
            "type": "default",
        },
        "rope_theta": 1000000,
        "sliding_window": None,
        "text_hidden_size": text_hidden,  # 2048 real
        "text_vocab_size": text_vocab,  # 151936 real
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 3072,  # codec vocab: 2048 codes + specials [HF06]
        "code_predictor_config": cp,
    }
    cfg.update(copy.deepcopy(CODEC_IDS))
    return cfg


def _code_predictor_config(hidden, intermediate, layers, heads, kv_heads, head_dim):
    # [HF06] (0.6B) / [HF17] (1.7B): hidden 1024, intermediate 3072, 5 layers,
    # 16 heads, 8 kv heads, head_dim 128, vocab 2048, rope_theta 1e6,
    # max_position_embeddings 65536 -- identical for both sizes.
    return {
        "attention_bias": False,
        "attention_dropout": 0,
        "head_dim": head_dim,
        "hidden_act": "silu",
        "hidden_size": hidden,
        "initializer_range": 0.02,
        "intermediate_size": intermediate,
        "layer_types": ["full_attention"] * layers,
        "max_position_embeddings": 65536,
        "max_window_layers": 28,
        "model_type": "qwen3_tts_talker_code_predictor",
        "num_attention_heads": heads,
        "num_code_groups": 16,
        "num_hidden_layers": layers,
        "num_key_value_heads": kv_heads,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "sliding_window": None,
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 2048,
    }


def _decoder_config(**over):
    # [ST] speech_tokenizer decoder_config (real values); `over` shrinks tiny.
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
    cfg.update(over)
    return cfg


def _encoder_config(**over):
    # [ST] encoder_config (Mimi).  HF spells the frame rate "_frame_rate";
    # mlx-audio reads "frame_rate" (default 12.5), so both are written.
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
    cfg.update(over)
    return cfg


def build_configs(size: str, with_encoder: bool = True, tiny_codec: str = "fast"):
    """Return (config.json, speech_tokenizer/config.json, generation_config.json,
    tokenizer spec) dicts for a size."""
    if size == "0.6b":
        text_vocab = REAL_TEXT_VOCAB
        talker = _talker_config(
            hidden=1024, intermediate=3072, layers=28, heads=16, kv_heads=8,
            head_dim=128, mrope_section=[24, 20, 20], text_hidden=2048,
            text_vocab=text_vocab,
            cp=_code_predictor_config(1024, 3072, 5, 16, 8, 128),
        )  # [HF06]  # fmt: skip
        spk = {"enc_dim": 1024, "sample_rate": 24000}  # [HF06]
        model_size = "0b6"  # [HF06]
        dec, enc = _decoder_config(), _encoder_config()
    elif size == "1.7b":
        text_vocab = REAL_TEXT_VOCAB
        talker = _talker_config(
            hidden=2048, intermediate=6144, layers=28, heads=16, kv_heads=8,
            head_dim=128, mrope_section=[24, 20, 20], text_hidden=2048,
            text_vocab=text_vocab,
            cp=_code_predictor_config(1024, 3072, 5, 16, 8, 128),
        )  # [HF17]: only hidden (2048) and intermediate (6144) differ from 0.6B  # fmt: skip
        spk = {"enc_dim": 2048, "sample_rate": 24000}  # [HF17] enc_dim == talker hidden
        model_size = "1b7"  # [HF17]
        dec, enc = _decoder_config(), _encoder_config()
    elif size == "tiny":
        text_vocab = 4096
        talker = _talker_config(
            hidden=128, intermediate=384, layers=4, heads=4, kv_heads=2,
            head_dim=32, mrope_section=[6, 5, 5], text_hidden=128,
            text_vocab=text_vocab,
            cp=_code_predictor_config(128, 384, 2, 4, 2, 32),
        )  # fmt: skip
        # ECAPA channels stay > 64 (conv-layout heuristic, see module doc).
        spk = {
            "enc_dim": 128,  # must equal talker hidden_size
            "sample_rate": 24000,
            "mel_dim": 128,  # fixed by mlx-audio's mel front end
            "enc_channels": [128, 128, 128, 128, 384],
            "enc_kernel_sizes": [5, 3, 3, 3, 1],
            "enc_dilations": [1, 2, 3, 4, 1],
            "enc_attention_channels": 128,
            "enc_res2net_scale": 8,
            "enc_se_channels": 128,
        }
        model_size = "tiny"
        if tiny_codec == "seanet":
            # Keeps two SEANet decoder blocks: 16*30 (blocks) * 2*2
            # (pre-upsample) = 1920 = decode_upsample_rate.  The 24 kHz block
            # needs > 64 channels (conv-layout heuristic), which makes it slow
            # with MLX's CPU convolutions (~0.6 s of CPU per codec frame here).
            dec = _decoder_config(
                latent_dim=128, codebook_dim=192, decoder_dim=272, hidden_size=64,
                intermediate_size=128, head_dim=32, num_attention_heads=2,
                num_key_value_heads=2, num_hidden_layers=1,
                upsample_rates=[16, 30], vector_quantization_hidden_dimension=192,
            )  # fmt: skip
        else:
            # "fast": no SEANet blocks (upsample_rates = []); the 1920x
            # upsampling is done by four pre-upsample stages (transposed conv
            # + ConvNeXt, 16 channels), so decoding costs ~20 ms of CPU per
            # frame.  Same code path (Qwen3TTSSpeechTokenizerDecoder,
            # streaming_step, chunked_decode) with an empty block list.
            # codebook_dim/2 stays > 64 for the quantizer 1x1 projections.
            dec = _decoder_config(
                latent_dim=16, codebook_dim=192, decoder_dim=16, hidden_size=64,
                intermediate_size=128, head_dim=32, num_attention_heads=2,
                num_key_value_heads=2, num_hidden_layers=1,
                upsample_rates=[], upsampling_ratios=[8, 8, 6, 5],
                vector_quantization_hidden_dimension=192,
            )  # fmt: skip
        enc = _encoder_config(
            codebook_dim=64, head_dim=32, hidden_size=64, intermediate_size=128,
            num_attention_heads=2, num_filters=8, num_hidden_layers=1,
            num_key_value_heads=2, num_quantizers=16,
            vector_quantization_hidden_dimension=64,
        )  # fmt: skip
    else:
        raise ValueError(f"unknown size {size!r}")

    special_base = text_vocab - SPECIAL_HEADROOM  # 151643 for the real sizes
    sid = {t: special_base + i for i, t in enumerate(QWEN_SPECIAL_TOKENS)}
    config = {
        "architectures": ["Qwen3TTSForConditionalGeneration"],  # [HF06]
        # [HF06] has 77091 (= "assistant" in the real vocab); overwritten below
        # with the id of "assistant" in the locally trained vocab.  mlx-audio
        # does not read it.
        "assistant_token_id": None,
        "im_end_token_id": sid["<|im_end|>"],  # 151645 real [HF06]
        "im_start_token_id": sid["<|im_start|>"],  # 151644 real [HF06]
        "tts_bos_token_id": sid["<tts_text_bos>"],  # 151672 real [HF06]
        "tts_eos_token_id": sid["<tts_text_eod>"],  # 151673 real [HF06]
        "tts_pad_token_id": sid["<tts_pad>"],  # 151671 real [HF06]
        "model_type": "qwen3_tts",  # [HF06]
        "tokenizer_type": "qwen3_tts_tokenizer_12hz",  # [HF06]
        "tts_model_size": model_size,
        "tts_model_type": "base",  # [HF06]
        "speaker_encoder_config": spk,
        "talker_config": talker,
        # Not in the real file: provenance of this synthetic checkpoint.
        "random_weights_checkpoint": {"size": size},
    }
    st_config = {
        "architectures": ["Qwen3TTSTokenizerV2Model"],  # [ST]
        "model_type": "qwen3_tts_tokenizer_12hz",  # [ST]
        "encoder_valid_num_quantizers": 16,  # [ST]
        "input_sample_rate": 24000,  # [ST]
        "output_sample_rate": 24000,  # [ST]
        "decode_upsample_rate": 1920,  # [ST] 24000 / 12.5
        "encode_downsample_rate": 1920,  # [ST]
        "decoder_config": dec,
    }
    if with_encoder:
        st_config["encoder_config"] = enc
    gen_config = {  # [GEN]
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
    return config, st_config, gen_config, special_base


# --------------------------------------------------------------------------
# Text tokenizer
# --------------------------------------------------------------------------

# Training text for the local BPE: common English words (so everyday English
# tokenizes to roughly one token per word, like the real Qwen vocab), digits,
# punctuation and the chat-template words.  Deterministic.
_WORDS = """
the of and to a in is it you that he was for on are with as I his they be at
one have this from or had by hot word but what some we can out other were all
there when up use your how said an each she which do their time if will way
about many then them write would like so these her long make thing see him two
has look more day could go come did number sound no most people my over know
water than call first who may down side been now find any new work part take
get place made live where after back little only round man year came show
every good me give our under name very through just form sentence great think
say help low line differ turn cause much mean before move right boy old too
same tell does set three want air well also play small end put home read hand
port large spell add even land here must big high such follow act why ask men
change went light kind off need house picture try us again animal point mother
world near build self earth father head stand own page should country found
answer school grow study still learn plant cover food sun four between state
keep eye never last let thought city tree cross farm hard start might story saw
far sea draw left late run don't while press close night real life few north
open seem together next white children begin got walk example ease paper group
always music those both mark often letter until mile river car feet care second
book carry took science eat room friend began idea fish mountain stop once base
hear horse cut sure watch color face wood main enough plain girl usual young
ready above ever red list though feel talk bird soon body dog family direct
pose leave song measure door product black short numeral class wind question
happen complete ship area half rock order fire south problem piece told knew
pass since top whole king space heard best hour better true during hundred five
remember step early hold west ground interest reach fast verb sing listen six
table travel less morning ten simple several vowel toward war lay against
pattern slow center love person money serve appear road map rain rule govern
pull cold notice voice unit power town fine certain fly fall lead cry dark
machine note wait plan figure star box noun field rest correct able pound done
beauty drive stood contain front teach week final gave green oh quick develop
ocean warm free minute strong special mind behind clear tail produce fact
street inch multiply nothing course stay wheel full force blue object decide
surface deep moon island foot system busy test record boat common gold possible
plane stead dry wonder laugh thousand ago ran check game shape equate miss
brought heat snow tire bring yes distant fill east paint language among hello
today weather speech model brown fox jumps lazy morning meeting please thanks
welcome message customer service order delivery tomorrow yesterday minutes
hours thank sorry okay assistant system user audio text voice clone reference
""".split()
_CHAT_WORDS = ["assistant", "user", "system"]


def _tokenizer_corpus(n_sentences: int = 6000, seed: int = 0):
    rng = random.Random(seed)
    out = []
    for _ in range(n_sentences):
        n = rng.randint(3, 16)
        words = [rng.choice(_WORDS) for _ in range(n)]
        s = " ".join(words)
        s = s[0].upper() + s[1:] + rng.choice([".", ".", "!", "?", ","])
        if rng.random() < 0.1:
            s += " " + str(rng.randint(0, 9999))
        out.append(s)
    # Chat-template framing, so "assistant" etc. become single tokens.
    for i in range(600):
        w = _CHAT_WORDS[i % 3]
        out.append(f"{w}\n{out[i]}\n")
    return out


def build_text_tokenizer(out_dir: Path, special_base: int, bpe_vocab: int = 3000):
    """Train a byte-level BPE with the Qwen2 pre-tokenizer and write
    tokenizer.json + tokenizer_config.json.  Ids 0..n-1 are BPE tokens, ids
    n..special_base-1 are unreachable filler entries, the 33 Qwen special
    tokens follow at special_base (151643 for the real sizes)."""
    from tokenizers import (
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )

    bpe_vocab = min(bpe_vocab, special_base)
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(
        vocab_size=bpe_vocab,
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator(_tokenizer_corpus(), trainer)
    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    n_bpe = len(vocab)
    if n_bpe > special_base:
        raise RuntimeError("BPE vocabulary overlaps the special-token ids")
    # The tokenizers library assigns added-token ids right after the model
    # vocabulary, so fill the gap with entries no merge can ever produce.
    for i in range(n_bpe, special_base):
        vocab[f"<|reserved_{i}|>"] = i
    spec["added_tokens"] = [
        {
            "id": special_base + i,
            "content": t,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, t in enumerate(QWEN_SPECIAL_TOKENS)
    ]
    text = json.dumps(spec, ensure_ascii=False)
    Tokenizer.from_str(text)  # must parse
    (out_dir / "tokenizer.json").write_text(text, encoding="utf-8")
    tok_cfg = {
        # Same class/fields as the real tokenizer_config.json [TOK]; the fast
        # tokenizer is built from tokenizer.json.
        "tokenizer_class": "Qwen2Tokenizer",
        "add_bos_token": False,
        "add_prefix_space": False,
        "bos_token": None,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 131072,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "unk_token": None,
        "added_tokens_decoder": {
            str(special_base + i): {
                "content": t,
                "lstrip": False,
                "normalized": False,
                "rstrip": False,
                "single_word": False,
                "special": True,
            }
            for i, t in enumerate(QWEN_SPECIAL_TOKENS)
        },
    }
    (out_dir / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2), encoding="utf-8")
    assistant_id = vocab.get("assistant")
    return n_bpe, assistant_id


# --------------------------------------------------------------------------
# Random weights
# --------------------------------------------------------------------------


def _init_kind(name: str):
    """(kind, value) for a parameter, from its (MLX) name."""
    leaf = name.rsplit(".", 1)[-1]
    if name.endswith("codebook.cluster_usage") or leaf == "initialized":
        return "const", 1.0
    if name.endswith(("layernorm.weight", "norm.weight", "norm1.weight", "norm2.weight")):
        return "const", 1.0
    if name.endswith(("norm.bias", "norm1.bias", "norm2.bias")) or leaf == "bias":
        return "const", 0.0
    if leaf in ("alpha", "beta"):  # SnakeBeta: exp(0) = 1
        return "const", 0.0
    if leaf == "scale":  # LayerScale
        return "const", 0.01
    if leaf == "gamma":  # ConvNeXt layer scale
        return "const", 0.1
    if leaf in ("embedding_sum", "embed_sum") or name.endswith("codebook.embed.weight"):
        return "normal", 1.0
    return "auto", None


def _random_param(name, shape, dtype, seed, mx):
    kind, val = _init_kind(name)
    if kind == "const":
        return mx.full(shape, val, dtype=dtype)
    key = mx.random.key((seed * 1_000_003 + zlib.crc32(name.encode())) % (2**62))
    if kind == "normal":
        std = val
    elif len(shape) == 3:  # conv: keep activations O(1)
        fan_in = shape[1] * shape[2]
        std = 1.0 / max(1.0, fan_in) ** 0.5
    else:  # linear / embedding: HF initializer_range
        std = 0.02
    return mx.random.normal(shape, dtype=dtype, scale=std, key=key)


def _st_mlx_to_hf(name: str, v, mx):
    """Speech-tokenizer parameter (MLX name/layout) -> list of (HF name, array)
    in the layout of the real speech_tokenizer/model.safetensors.  Inverse of
    Qwen3TTSSpeechTokenizer.sanitize."""
    import re

    if name.startswith("decoder."):
        if name.endswith(".codebook.embed.weight"):
            base = name[: -len(".codebook.embed.weight")]
            usage = mx.ones((v.shape[0],), dtype=v.dtype)
            return [
                (f"{base}._codebook.cluster_usage", usage),
                (f"{base}._codebook.embedding_sum", v * usage[:, None]),
            ]
        if v.ndim == 3:
            is_transpose = ("upsample" in name and ".0.conv.weight" in name) or (
                "decoder.decoder" in name and "block.1.conv.weight" in name
            )
            if is_transpose:  # MLX (out, k, in) -> torch ConvTranspose1d (in, out, k)
                return [(name, mx.transpose(v, (2, 0, 1)))]
            return [(name, mx.swapaxes(v, 1, 2))]  # (out, k, in) -> (out, in, k)
        return [(name, v)]

    assert name.startswith("encoder_model."), name
    n = name[len("encoder_model.") :]
    conv3 = lambda a: mx.swapaxes(a, 1, 2) if a.ndim == 3 else a  # noqa: E731
    m = re.fullmatch(r"encoder\.init_conv1d\.conv\.conv\.(weight|bias)", n)
    if m:
        return [(f"encoder.encoder.layers.0.conv.{m[1]}", conv3(v))]
    m = re.fullmatch(r"encoder\.final_conv1d\.conv\.conv\.(weight|bias)", n)
    if m:
        return [(f"encoder.encoder.layers.14.conv.{m[1]}", conv3(v))]
    m = re.fullmatch(r"encoder\.layers\.(\d+)\.residuals\.0\.block\.(\d+)\.conv\.conv\.(weight|bias)", n)
    if m:
        layer, blk = int(m[1]), int(m[2])
        n_hf = [1, 4, 7, 10][layer]
        b_hf = [1, 3][blk]
        return [(f"encoder.encoder.layers.{n_hf}.block.{b_hf}.conv.{m[3]}", conv3(v))]
    m = re.fullmatch(r"encoder\.layers\.(\d+)\.downsample\.conv\.conv\.(weight|bias)", n)
    if m:
        n_hf = [3, 6, 9, 12][int(m[1])]
        return [(f"encoder.encoder.layers.{n_hf}.conv.{m[2]}", conv3(v))]
    m = re.fullmatch(r"encoder_transformer\.transformer\.layers\.(\d+)\.(.+)", n)
    if m:
        i, rest = m[1], m[2]
        p = f"encoder.encoder_transformer.layers.{i}"
        if rest == "self_attn.in_proj.weight":
            q, k, vv = mx.split(v, 3, axis=0)
            return [
                (f"{p}.self_attn.q_proj.weight", q),
                (f"{p}.self_attn.k_proj.weight", k),
                (f"{p}.self_attn.v_proj.weight", vv),
            ]
        table = {
            "self_attn.out_proj.weight": "self_attn.o_proj.weight",
            "gating.linear1.weight": "mlp.fc1.weight",
            "gating.linear2.weight": "mlp.fc2.weight",
            "norm1.weight": "input_layernorm.weight",
            "norm1.bias": "input_layernorm.bias",
            "norm2.weight": "post_attention_layernorm.weight",
            "norm2.bias": "post_attention_layernorm.bias",
            "layer_scale_1.scale": "self_attn_layer_scale.scale",
            "layer_scale_2.scale": "mlp_layer_scale.scale",
        }
        if rest in table:
            return [(f"{p}.{table[rest]}", v)]
        raise KeyError(name)
    if n == "downsample.conv.conv.conv.weight":
        return [("encoder.downsample.conv.weight", conv3(v))]
    m = re.fullmatch(r"quantizer\.(rvq_first|rvq_rest)\.(.+)", n)
    if m:
        q = {
            "rvq_first": "semantic_residual_vector_quantizer",
            "rvq_rest": "acoustic_residual_vector_quantizer",
        }[m[1]]
        rest = m[2]
        if rest in ("input_proj.weight", "output_proj.weight"):
            return [(f"encoder.quantizer.{q}.{rest}", conv3(v))]
        mm = re.fullmatch(r"vq\.layers\.(\d+)\.codebook\.(embedding_sum|cluster_usage|initialized)", rest)
        if mm:
            leaf = {"embedding_sum": "embed_sum"}.get(mm[2], mm[2])
            return [(f"encoder.quantizer.{q}.layers.{mm[1]}.codebook.{leaf}", v)]
    raise KeyError(f"no HF name for speech-tokenizer parameter {name}")


def _main_mlx_to_hf(name, v, mx):
    """Talker/speaker-encoder parameter -> HF layout (Conv1d (out, in, k))."""
    if v.ndim == 3:
        return mx.swapaxes(v, 1, 2)
    return v


def write_checkpoint(out: Path, size: str = "tiny", dtype: str = "bfloat16", seed: int = 0) -> Path:
    """Write a random-weight checkpoint of ``size`` into ``out`` and return ``out``.

    The parameter names and shapes come from mlx-audio's own model classes and are
    round-tripped through mlx-audio's ``sanitize`` before anything is written, so a
    change in mlx-audio's layout fails here rather than at load time.
    """
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_audio.tts.models.qwen3_tts.config import (
        ModelConfig,
        Qwen3TTSTokenizerConfig,
        Qwen3TTSTokenizerDecoderConfig,
        Qwen3TTSTokenizerEncoderConfig,
        filter_dict_for_dataclass,
    )
    from mlx_audio.tts.models.qwen3_tts.qwen3_tts import Model
    from mlx_audio.tts.models.qwen3_tts.speech_tokenizer import Qwen3TTSSpeechTokenizer

    out = Path(out)
    (out / "speech_tokenizer").mkdir(parents=True, exist_ok=True)
    mx_dtype = getattr(mx, dtype)
    config, st_config, gen_config, special_base = build_configs(size)
    n_bpe, assistant_id = build_text_tokenizer(out, special_base)
    config["assistant_token_id"] = assistant_id
    config["random_weights_checkpoint"].update({"seed": seed, "dtype": dtype, "bpe_tokens": n_bpe})
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / "speech_tokenizer" / "config.json").write_text(json.dumps(st_config, indent=2))
    (out / "generation_config.json").write_text(json.dumps(gen_config, indent=2))

    model = Model(ModelConfig.from_dict(config))  # parameters stay lazy
    shapes = {k: v.shape for k, v in tree_flatten(model.parameters())}
    del model
    mlx_main, hf_main = {}, {}
    for name, shape in shapes.items():
        v = _random_param(name, shape, mx_dtype, seed, mx)
        mlx_main[name] = v
        hf_main[name] = _main_mlx_to_hf(name, v, mx)
    san = Model.sanitize(dict(hf_main))
    bad = [k for k in mlx_main if k not in san or san[k].shape != mlx_main[k].shape]
    if bad or set(san) != set(mlx_main):
        raise RuntimeError(f"Model.sanitize round trip failed for {bad[:10]}")
    mx.save_safetensors(str(out / "model.safetensors"), hf_main, metadata={"format": "pt"})
    del hf_main, mlx_main, san

    dec_cfg = Qwen3TTSTokenizerDecoderConfig(
        **filter_dict_for_dataclass(Qwen3TTSTokenizerDecoderConfig, st_config["decoder_config"])
    )
    enc_cfg = Qwen3TTSTokenizerEncoderConfig(
        **filter_dict_for_dataclass(Qwen3TTSTokenizerEncoderConfig, st_config["encoder_config"])
    )
    st = Qwen3TTSSpeechTokenizer(Qwen3TTSTokenizerConfig(encoder_config=enc_cfg, decoder_config=dec_cfg))
    st_shapes = {k: v.shape for k, v in tree_flatten(st.parameters())}
    del st
    hf_st = {}
    for name, shape in st_shapes.items():
        v = _random_param(name, shape, mx.float32, seed + 1, mx)
        for hk, hv in _st_mlx_to_hf(name, v, mx):
            hf_st[hk] = hv
    san = Qwen3TTSSpeechTokenizer.sanitize(dict(hf_st))
    expect = {k for k in st_shapes if not k.endswith(".initialized")}
    if expect - set(san):
        raise RuntimeError(f"speech tokenizer sanitize round trip lost {sorted(expect - set(san))[:5]}")
    mx.save_safetensors(str(out / "speech_tokenizer" / "model.safetensors"), hf_st, metadata={"format": "pt"})
    return out


def main(argv: list[str] | None = None) -> int:

    ap = argparse.ArgumentParser(description="Write a random-weight Qwen3-TTS Base checkpoint.")
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--size", choices=["tiny", "0.6b", "1.7b"], default="tiny")
    ap.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.time()
    write_checkpoint(args.out_dir, args.size, args.dtype, args.seed)
    print(f"wrote {args.size} checkpoint to {args.out_dir} in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
