"""A tiny random-weight Parakeet TDT checkpoint (the proof pass's default English recognizer family, for its
per-take path in tests) in the on-disk layout of an ``mlx-community/parakeet-tdt-*`` snapshot, which mlx-audio's
STT loader (``mlx_audio.stt.load``) reads::

    OUT/config.json         the NeMo model config as those snapshots carry it: ``target`` (the RNN-T BPE model),
                            ``model_defaults.tdt_durations``, ``preprocessor`` (the mel front end), ``encoder``
                            (the FastConformer), ``decoder`` (the LSTM prediction network), ``joint`` (with the
                            SentencePiece ``vocabulary`` inline) and ``decoding``; and ``model_type``
                            ``parakeet_tdt`` (the alias mlx-audio's loader resolves), so that a directory of any
                            name loads
    OUT/model.safetensors   the tensors in MLX's layout, named as mlx-audio's Parakeet model names them (the
                            snapshots are converted to it; mlx-audio's Parakeet has no ``sanitize``)

Every size is shrunk (16 mel bins, a 1-layer encoder of width 32, a 1-layer LSTM of 32, a vocabulary of a few
dozen word pieces) so that the real mlx-audio code transcribes a take on a CPU in a fraction of a second. The
weights are random: what it hears is garbage (a few word pieces a second at most, bounded by the decoder's
``max_symbols``: a transducer cannot run on past its audio).

    python -m narrate.worker.testkit.random_checkpoint OUT --kind parakeet
"""

from __future__ import annotations

import json
from pathlib import Path

import mlx.core as mx
from mlx_audio.stt.models.parakeet.parakeet import Model
from narrate.worker.testkit.random_checkpoint.weights import parameter_shapes, random_param

DURATIONS = [0, 1, 2, 3, 4]  # TDT's frame advances, as published
WORDS = "the a and of to in it was that he she said not with his her for on at as but they all one".split() + list(
    "abcdefghijklmnopqrstuvwxyz"
)
VOCABULARY = ["<unk>", *(f"\u2581{w}" for w in WORDS), *("s", "ed", "ing", "er", "ly", ".", ",", "?")]
WIDTH = 32


def parakeet_config() -> dict:
    """config.json of the tiny recognizer: the published structure with every size shrunk."""
    vocab = len(VOCABULARY)
    return {
        "model_type": "parakeet_tdt",
        "target": "nemo.collections.asr.models.rnnt_bpe_models.EncDecRNNTBPEModel",
        "sample_rate": 16000,
        "model_defaults": {
            "enc_hidden": WIDTH,
            "pred_hidden": WIDTH,
            "joint_hidden": WIDTH,
            "tdt_durations": DURATIONS,
            "num_tdt_durations": len(DURATIONS),
        },
        "preprocessor": {
            "sample_rate": 16000,
            "normalize": "per_feature",
            "window_size": 0.025,
            "window_stride": 0.01,
            "window": "hann",
            "features": 16,
            "n_fft": 512,
            "dither": 0.0,
            "pad_to": 0,
            "pad_value": 0.0,
        },
        "encoder": {
            "feat_in": 16,
            "n_layers": 1,
            "d_model": WIDTH,
            "n_heads": 2,
            "ff_expansion_factor": 2,
            "subsampling_factor": 8,
            "self_attention_model": "rel_pos",
            "subsampling": "dw_striding",
            "conv_kernel_size": 9,
            "subsampling_conv_channels": 16,
            "pos_emb_max_len": 5000,
            "causal_downsampling": False,
            "use_bias": False,
            "xscaling": False,
        },
        "decoder": {"blank_as_pad": True, "vocab_size": vocab, "prednet": {"pred_hidden": WIDTH, "pred_rnn_layers": 1}},
        "joint": {
            "num_classes": vocab,
            "vocabulary": VOCABULARY,
            "num_extra_outputs": len(DURATIONS),
            "jointnet": {"joint_hidden": WIDTH, "activation": "relu", "encoder_hidden": WIDTH, "pred_hidden": WIDTH},
        },
        "decoding": {"model_type": "tdt", "durations": DURATIONS, "greedy": {"max_symbols": 10}},
        "random_weights_checkpoint": {"note": "random weights: what it transcribes is garbage (narrate's tests)"},
    }


def write_parakeet_checkpoint(out: Path, seed: int = 0, dtype: str = "bfloat16") -> Path:
    """Write the tiny random-weight Parakeet TDT checkpoint into `out` (made if missing); returns `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    config = parakeet_config()
    shapes = parameter_shapes(Model.from_config(config))
    kind = getattr(mx, dtype)
    params = {name: _param(name, shape, kind, seed) for name, shape in shapes.items()}
    mx.save_safetensors(str(out / "model.safetensors"), params)
    config["random_weights_checkpoint"].update({"seed": seed, "dtype": dtype})
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return out


def _param(name: str, shape: tuple[int, ...], dtype: mx.Dtype, seed: int) -> mx.array:
    if name.endswith("running_var"):  # the convolution module's batch norm: a unit variance
        return mx.ones(shape, dtype)
    if name.endswith("running_mean"):
        return mx.zeros(shape, dtype)
    return random_param(name, shape, dtype, seed)
