"""The random weights of a checkpoint, written in the layout of the published safetensors files.

Parameter names and shapes come from mlx-audio's own model classes; each tensor is a pure
function of (size, dtype, seed, name). They are converted to the published (PyTorch) layout and
round-tripped through mlx-audio's ``sanitize`` before anything is written, so a change in
mlx-audio's layout fails here rather than at load time.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

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
from narrate.worker.testkit.random_checkpoint.configs import build_configs
from narrate.worker.testkit.random_checkpoint.tokenizer import write_tokenizer

LINEAR_STD = 0.02  # the published initializer_range


def _constant(name: str) -> float | None:
    """The value of a parameter that is initialized to a constant, else None."""
    leaf = name.rsplit(".", 1)[-1]
    if name.endswith("codebook.cluster_usage") or leaf == "initialized":
        return 1.0
    if name.endswith(("layernorm.weight", "norm.weight", "norm1.weight", "norm2.weight")):
        return 1.0
    if name.endswith(("norm.bias", "norm1.bias", "norm2.bias")) or leaf == "bias":
        return 0.0
    if leaf in ("alpha", "beta"):  # SnakeBeta: exp(0) = 1
        return 0.0
    if leaf == "scale":  # LayerScale
        return 0.01
    if leaf == "gamma":  # ConvNeXt layer scale
        return 0.1
    return None


def parameter_shapes(module: Any) -> dict[str, tuple[int, ...]]:
    """Each parameter's dotted name and shape (a lazy module's parameters are not computed)."""
    flat = tree_flatten(module.parameters())
    assert isinstance(flat, list)  # without a destination: (name, array) pairs
    return {k: tuple(v.shape) for k, v in flat}


def random_param(name: str, shape: tuple[int, ...], dtype: mx.Dtype, seed: int) -> mx.array:
    value = _constant(name)
    if value is not None:
        return mx.full(shape, value, dtype=dtype)
    key = mx.random.key((seed * 1_000_003 + zlib.crc32(name.encode())) % (2**62))
    leaf = name.rsplit(".", 1)[-1]
    if leaf in ("embedding_sum", "embed_sum") or name.endswith("codebook.embed.weight"):
        std = 1.0  # codebooks
    elif len(shape) == 3:  # conv: keep activations O(1)
        std = 1.0 / max(1.0, shape[1] * shape[2]) ** 0.5
    else:  # linear and embedding
        std = LINEAR_STD
    return mx.random.normal(shape, dtype=dtype, scale=std, key=key)


def _conv_to_torch(a: mx.array) -> mx.array:
    """An MLX Conv1d weight (out, k, in) in PyTorch's layout (out, in, k); other arrays as is."""
    return mx.swapaxes(a, 1, 2) if a.ndim == 3 else a


# The codec encoder (Mimi): MLX names -> published names, as Qwen3TTSSpeechTokenizer.sanitize
# maps them the other way.
ENCODER_LAYER = [1, 4, 7, 10]  # published index of encoder layer i's residual block
ENCODER_BLOCK = [1, 3]  # published index of a residual block's conv j
ENCODER_DOWNSAMPLE = [3, 6, 9, 12]  # published index of encoder layer i's downsampling conv
ENCODER_FINAL = 14  # published index of the final conv
TRANSFORMER_NAMES = {
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
QUANTIZERS = {"rvq_first": "semantic_residual_vector_quantizer", "rvq_rest": "acoustic_residual_vector_quantizer"}


def _decoder_to_torch(name: str, v: mx.array) -> list[tuple[str, mx.array]]:
    if name.endswith(".codebook.embed.weight"):  # stored as a usage count and a sum
        base = name[: -len(".codebook.embed.weight")]
        usage = mx.ones((v.shape[0],), dtype=v.dtype)
        return [(f"{base}._codebook.cluster_usage", usage), (f"{base}._codebook.embedding_sum", v * usage[:, None])]
    if v.ndim == 3:
        is_transpose = ("upsample" in name and ".0.conv.weight" in name) or (
            "decoder.decoder" in name and "block.1.conv.weight" in name
        )
        if is_transpose:  # MLX (out, k, in) -> PyTorch ConvTranspose1d (in, out, k)
            return [(name, mx.transpose(v, (2, 0, 1)))]
        return [(name, _conv_to_torch(v))]
    return [(name, v)]


def _encoder_to_torch(name: str, v: mx.array) -> list[tuple[str, mx.array]]:
    n = name.removeprefix("encoder_model.")
    if m := re.fullmatch(r"encoder\.init_conv1d\.conv\.conv\.(weight|bias)", n):
        return [(f"encoder.encoder.layers.0.conv.{m[1]}", _conv_to_torch(v))]
    if m := re.fullmatch(r"encoder\.final_conv1d\.conv\.conv\.(weight|bias)", n):
        return [(f"encoder.encoder.layers.{ENCODER_FINAL}.conv.{m[1]}", _conv_to_torch(v))]
    if m := re.fullmatch(r"encoder\.layers\.(\d+)\.residuals\.0\.block\.(\d+)\.conv\.conv\.(weight|bias)", n):
        layer, block = ENCODER_LAYER[int(m[1])], ENCODER_BLOCK[int(m[2])]
        return [(f"encoder.encoder.layers.{layer}.block.{block}.conv.{m[3]}", _conv_to_torch(v))]
    if m := re.fullmatch(r"encoder\.layers\.(\d+)\.downsample\.conv\.conv\.(weight|bias)", n):
        return [(f"encoder.encoder.layers.{ENCODER_DOWNSAMPLE[int(m[1])]}.conv.{m[2]}", _conv_to_torch(v))]
    if m := re.fullmatch(r"encoder_transformer\.transformer\.layers\.(\d+)\.(.+)", n):
        prefix, rest = f"encoder.encoder_transformer.layers.{m[1]}", m[2]
        if rest == "self_attn.in_proj.weight":
            q, k, vv = mx.split(v, 3, axis=0)
            return [(f"{prefix}.self_attn.{p}_proj.weight", a) for p, a in (("q", q), ("k", k), ("v", vv))]
        if rest in TRANSFORMER_NAMES:
            return [(f"{prefix}.{TRANSFORMER_NAMES[rest]}", v)]
    if n == "downsample.conv.conv.conv.weight":
        return [("encoder.downsample.conv.weight", _conv_to_torch(v))]
    if m := re.fullmatch(r"quantizer\.(rvq_first|rvq_rest)\.(.+)", n):
        quantizer, rest = QUANTIZERS[m[1]], m[2]
        if rest in ("input_proj.weight", "output_proj.weight"):
            return [(f"encoder.quantizer.{quantizer}.{rest}", _conv_to_torch(v))]
        cb = re.fullmatch(r"vq\.layers\.(\d+)\.codebook\.(embedding_sum|cluster_usage|initialized)", rest)
        if cb:
            leaf = {"embedding_sum": "embed_sum"}.get(cb[2], cb[2])
            return [(f"encoder.quantizer.{quantizer}.layers.{cb[1]}.codebook.{leaf}", v)]
    raise KeyError(f"no published name for speech-tokenizer parameter {name}")


def speech_tokenizer_to_torch(name: str, v: mx.array) -> list[tuple[str, mx.array]]:
    """A speech-tokenizer parameter (MLX name and layout) as the published (name, array) pairs:
    the inverse of Qwen3TTSSpeechTokenizer.sanitize."""
    if name.startswith("decoder."):
        return _decoder_to_torch(name, v)
    if name.startswith("encoder_model."):
        return _encoder_to_torch(name, v)
    raise KeyError(f"no published name for speech-tokenizer parameter {name}")


def _write_model(out: Path, config: dict, dtype: mx.Dtype, seed: int) -> None:
    model = Model(ModelConfig.from_dict(config))  # parameters stay lazy
    shapes = parameter_shapes(model)
    del model
    mlx_params = {name: random_param(name, shape, dtype, seed) for name, shape in shapes.items()}
    torch_params = {name: _conv_to_torch(v) for name, v in mlx_params.items()}
    back = Model.sanitize(dict(torch_params))
    bad = [k for k in mlx_params if k not in back or back[k].shape != mlx_params[k].shape]
    if bad or set(back) != set(mlx_params):
        raise RuntimeError(f"Model.sanitize round trip failed for {bad[:10]}")
    mx.save_safetensors(str(out / "model.safetensors"), torch_params, metadata={"format": "pt"})


# The codec decoder transformer's query and key projections (published names): scaled by
# ``codec_attention_scale`` to give random weights attention as sharp as trained weights have it; and
# its attention's layer scale, 1 instead of the initial 0.01 then, so that what attention sees weighs in the audio.
CODEC_ATTENTION = re.compile(r"^decoder\.pre_transformer\.layers\.\d+\.self_attn\.[qk]_proj\.weight$")
CODEC_ATTENTION_LAYER_SCALE = re.compile(r"^decoder\.pre_transformer\.layers\.\d+\.self_attn_layer_scale\.scale$")


def _write_speech_tokenizer(out: Path, st_config: dict, seed: int, attention_scale: float = 1.0) -> None:
    def dataclass_config(cls: type[Any], values: dict[str, Any]) -> Any:
        return cls(**filter_dict_for_dataclass(cls, values))

    tokenizer = Qwen3TTSSpeechTokenizer(
        Qwen3TTSTokenizerConfig(
            encoder_config=dataclass_config(Qwen3TTSTokenizerEncoderConfig, st_config["encoder_config"]),
            decoder_config=dataclass_config(Qwen3TTSTokenizerDecoderConfig, st_config["decoder_config"]),
        )
    )
    shapes = parameter_shapes(tokenizer)
    del tokenizer
    torch_params: dict[str, mx.array] = {}
    for name, shape in shapes.items():
        torch_params.update(speech_tokenizer_to_torch(name, random_param(name, shape, mx.float32, seed)))
    if attention_scale != 1.0:
        for name in [n for n in torch_params if CODEC_ATTENTION.match(n)]:
            torch_params[name] = torch_params[name] * attention_scale
        for name in [n for n in torch_params if CODEC_ATTENTION_LAYER_SCALE.match(n)]:
            torch_params[name] = mx.ones_like(torch_params[name])
    back = Qwen3TTSSpeechTokenizer.sanitize(dict(torch_params))
    lost = {k for k in shapes if not k.endswith(".initialized")} - set(back)
    if lost:
        raise RuntimeError(f"speech tokenizer sanitize round trip lost {sorted(lost)[:5]}")
    mx.save_safetensors(str(out / "speech_tokenizer" / "model.safetensors"), torch_params, metadata={"format": "pt"})


def write_checkpoint(
    out: Path,
    size: str = "tiny",
    dtype: str = "bfloat16",
    seed: int = 0,
    *,
    kind: str = "base",
    codec_attention_scale: float = 1.0,
) -> Path:
    """Write a random-weight checkpoint of `size` (tiny, 0.6b, 1.7b) and `kind` (base,
    custom-voice, voice-design; or the config's spelling, custom_voice...) into `out`; returns
    `out`. The model weights are in `dtype`, the codec's in float32 (as published). The kinds share
    every tensor but the speaker encoder's (Base only): the same seed gives the same talker.
    `codec_attention_scale` (other than 1) multiplies the codec decoder transformer's query and key
    weights (its attention logits by the square) and sets its attention's layer scale to 1: random
    weights attend almost evenly and weakly, trained ones sharply, and only such attention shows
    what the decoder's sliding window changes (the parity tests)."""
    out = Path(out)
    config, st_config, gen_config, special_base = build_configs(size, kind)
    (out / "speech_tokenizer").mkdir(parents=True, exist_ok=True)
    n_bpe, assistant_id = write_tokenizer(out, special_base)
    config["assistant_token_id"] = assistant_id
    config["random_weights_checkpoint"].update({"seed": seed, "dtype": dtype, "bpe_tokens": n_bpe})
    if codec_attention_scale != 1.0:
        config["random_weights_checkpoint"]["codec_attention_scale"] = codec_attention_scale
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / "speech_tokenizer" / "config.json").write_text(json.dumps(st_config, indent=2))
    (out / "generation_config.json").write_text(json.dumps(gen_config, indent=2))
    _write_model(out, config, getattr(mx, dtype), seed)
    _write_speech_tokenizer(out, st_config, seed + 1, codec_attention_scale)
    return out
