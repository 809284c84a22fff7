"""The compiled code-predictor step's buckets, and the codec's faster CPU layers equal to mlx's (and its stages
computed one at a time), without a checkpoint."""

from __future__ import annotations

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from narrate.worker.engine import code_predictor_step as cps
from narrate.worker.engine.codec_fast import (
    DepthwiseConv1d,
    FastLinear,
    OverlapTransposeConv1d,
    PatchConv1d,
    Settled,
    StridedTransposeConv1d,
    is_depthwise,
    is_overlap_transpose,
    is_plain,
    is_strided_transpose,
    stages,
)


def test_buckets_are_powers_of_two_and_the_batch_size():
    assert cps.buckets(1) == [1]
    assert cps.buckets(5) == [1, 2, 4, 5]
    assert cps.buckets(16) == [1, 2, 4, 8, 16]
    assert [cps.bucket(n, 5) for n in range(1, 6)] == [1, 2, 4, 4, 5]
    assert [cps.bucket(n, 16) for n in (3, 8, 9, 16)] == [4, 8, 16, 16]
    assert cps.buckets(5, every=True) == [1, 2, 3, 4, 5]
    assert [cps.bucket(n, 16, every=True) for n in (3, 9, 16)] == [3, 9, 16]


def test_faster_codec_layers_equal_mlx_layers():
    mx.random.seed(3)
    x = mx.random.normal((2, 300, 12))
    for dilation, padding in ((1, 0), (3, 2)):
        conv = nn.Conv1d(12, 12, kernel_size=7, dilation=dilation, padding=padding, groups=12)
        assert is_depthwise(conv) and not is_plain(conv)
        np.testing.assert_allclose(np.array(DepthwiseConv1d(conv)(x)), np.array(conv(x)), rtol=0, atol=1e-6)
        for kernel in (1, 7):
            conv = nn.Conv1d(12, 5, kernel_size=kernel, dilation=dilation, padding=padding)
            assert is_plain(conv) and not is_depthwise(conv)
            np.testing.assert_allclose(np.array(PatchConv1d(conv)(x)), np.array(conv(x)), rtol=0, atol=1e-6)
    assert not is_depthwise(nn.Conv1d(12, 12, kernel_size=7, groups=12, stride=2))
    assert not is_plain(nn.Conv1d(12, 12, kernel_size=7, stride=2))
    for stride in (5, 8):
        up = nn.ConvTranspose1d(12, 7, kernel_size=stride, stride=stride)
        assert is_strided_transpose(up)
        np.testing.assert_allclose(np.array(StridedTransposeConv1d(up)(x)), np.array(up(x)), rtol=0, atol=1e-6)
    assert not is_strided_transpose(nn.ConvTranspose1d(12, 7, kernel_size=8, stride=4))
    # the decoder blocks' upsamplings of the real codec: kernel twice the stride (and the tiny shapes of each)
    for cin, out, stride, chunks in ((12, 7, 4, 2), (12, 7, 3, 2), (12, 7, 5, 3), (96, 48, 8, 2)):
        up = nn.ConvTranspose1d(cin, out, kernel_size=stride * chunks, stride=stride)
        assert is_overlap_transpose(up) and not is_strided_transpose(up)
        x_up = mx.random.normal((2, 9, cin))
        np.testing.assert_allclose(np.array(OverlapTransposeConv1d(up)(x_up)), np.array(up(x_up)), rtol=0, atol=2e-5)
    assert not is_overlap_transpose(nn.ConvTranspose1d(12, 7, kernel_size=5, stride=5))  # the strided one's
    assert not is_overlap_transpose(nn.ConvTranspose1d(12, 7, kernel_size=7, stride=4))  # not a multiple
    assert not is_overlap_transpose(nn.ConvTranspose1d(12, 7, kernel_size=8, stride=4, padding=1))
    linear = nn.Linear(12, 40)
    assert FastLinear(linear).flat_np is None  # this process's MLX products: its own BLAS (or the system's)
    np.testing.assert_array_equal(np.array(FastLinear(linear)(x)), np.array(linear(x)))  # the same addmm
    np.testing.assert_array_equal(np.array(FastLinear(nn.Linear(12, 40, bias=False))(x)).shape, (2, 300, 40))


def test_faster_codec_layers_through_numpys_openblas_equal_mlx_layers(monkeypatch):
    """Where MLX keeps its bundled BLAS (blas.numpy_products), the layers' large products go through
    numpy.matmul: the same samples within float rounding; small ones stay in MLX."""
    from narrate.worker import blas
    from narrate.worker.engine import codec_fast

    monkeypatch.setattr(blas, "_numpy_ready", True)
    calls = []
    matmul = np.matmul
    monkeypatch.setattr(codec_fast.np, "matmul", lambda a, b: calls.append(a.shape) or matmul(a, b))
    mx.random.seed(4)
    x = mx.random.normal((2, 3000, 12))
    conv = nn.Conv1d(12, 5, kernel_size=7, dilation=3, padding=2)
    up = nn.ConvTranspose1d(12, 7, kernel_size=5, stride=5)
    for mine, theirs in (
        (PatchConv1d(conv), conv),
        (StridedTransposeConv1d(up), up),
        (FastLinear(nn.Linear(12, 40)), None),
        (FastLinear(nn.Linear(12, 40, bias=False)), None),
    ):
        assert mine.flat_np is not None
        want = theirs(x) if theirs is not None else x @ mine.flat + (mine.bias if "bias" in mine else 0)
        n = len(calls)
        np.testing.assert_allclose(np.array(mine(x)), np.array(want), rtol=0, atol=1e-5)
        assert len(calls) == n + 1  # through numpy
    small = mx.random.normal((1, 30, 12))
    n = len(calls)
    np.testing.assert_allclose(np.array(PatchConv1d(conv)(small)), np.array(conv(small)), rtol=0, atol=1e-6)
    assert len(calls) == n  # too small to gain: MLX's own


def test_a_decoder_shaped_like_the_real_ones_is_settled_stage_by_stage_with_the_same_samples():
    """The real codecs have SEANet decoder blocks (the tiny test checkpoint has none): an mlx-audio
    decoder built with two of them is cut after its ConvNeXt block and after each decoder block, as
    streaming_step runs them, and the cut changes no sample."""
    from mlx_audio.tts.models.qwen3_tts.config import Qwen3TTSTokenizerDecoderConfig
    from mlx_audio.tts.models.qwen3_tts.speech_tokenizer import Qwen3TTSSpeechTokenizerDecoder
    from narrate.worker.engine.codec_stream import CodecWorker

    config = Qwen3TTSTokenizerDecoderConfig(
        latent_dim=16,
        codebook_dim=32,
        codebook_size=64,
        decoder_dim=16,
        hidden_size=32,
        intermediate_size=64,
        head_dim=16,
        num_attention_heads=2,
        num_hidden_layers=1,
        num_key_value_heads=2,
        semantic_codebook_size=64,
        upsample_rates=[2, 3],
        upsampling_ratios=[2],
        vector_quantization_hidden_dimension=32,
    )
    mx.random.seed(0)
    decoder = Qwen3TTSSpeechTokenizerDecoder(config)
    mx.eval(decoder.parameters())
    cut_at = [type(owner[i]).__name__ for owner, i in stages(decoder)]
    assert cut_at == ["ConvNeXtBlock", "DecoderBlock", "DecoderBlock"]
    worker = CodecWorker(decoder, threaded=False)
    assert sum(isinstance(new, Settled) for *_, new in worker.swaps) == 3
    rng = np.random.default_rng(0)
    codes = [rng.integers(0, 64, 16).astype(np.int32) for _ in range(5)]
    cut = worker.row().decode(codes)
    worker.swaps = [s for s in worker.swaps if not isinstance(s[3], Settled)]
    assert np.array_equal(cut, worker.row().decode(codes)) and cut.shape == (5 * 2 * 2 * 3,)


def test_a_decoder_blocks_upsampling_streams_the_same_with_the_faster_layer():
    """The real codec's decoder blocks upsample with a transposed convolution of kernel twice the stride, streamed
    with an overlap-add of its tail (mlx-audio's DecoderBlockUpsample.step): with OverlapTransposeConv1d in its
    place, chunk by chunk, the samples are one whole decode's with mlx-audio's layer, within float rounding."""
    from mlx_audio.tts.models.qwen3_tts.speech_tokenizer import DecoderBlockUpsample

    mx.random.seed(5)
    block = DecoderBlockUpsample(24, 12, 5)
    x = mx.random.normal((1, 11, 24))
    whole = block(x)  # mlx-audio's layer, the whole sequence at once
    assert is_overlap_transpose(block.conv)
    original, block.conv = block.conv, OverlapTransposeConv1d(block.conv)
    try:
        pieces, start = [], 0
        for size in (4, 5, 2):
            pieces.append(block.step(x[:, start : start + size]))
            start += size
    finally:
        block.conv = original
        block.reset_state()
    np.testing.assert_allclose(np.array(mx.concatenate(pieces, axis=1)), np.array(whole), rtol=0, atol=2e-5)
