"""narrate computes what Qwen's reference implementation (qwen-tts) computes, on the same random-weight
checkpoints: the codec's audio (with the decoder's 72-frame window), the talker's and code predictor's greedy
codes (float32, alone and as rows of a batch), the x-vector. The reference's numbers are golden files
(tests/parity/golden, made by tests/parity/make_reference.py where torch is installed); the checkpoints are
rebuilt here by narrate's own builder from the same seeds, and checked to be the same bytes first."""

from __future__ import annotations

import json

import numpy as np
import pytest
from parity import cases, ours

MANIFEST = json.loads(cases.MANIFEST.read_text())
WINDOW = 72


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """name -> (the float32 checkpoint as narrate loads it, the reference's golden numbers)."""
    root = tmp_path_factory.mktemp("parity")
    out = {}
    for ck in cases.CHECKPOINTS:
        path = cases.build(ck, root)
        recorded = MANIFEST["checkpoints"][ck.name]["weights"]
        assert cases.weights_digest(path) == recorded, (
            f"{ck.name}: narrate's builder no longer writes the weights the reference was run on; "
            "rerun tests/parity/make_reference.py (docs/models.md says how)"
        )
        with np.load(cases.GOLDEN / f"{ck.name}.npz") as f:
            out[ck.name] = (ours.load(path), {k: f[k] for k in f.files})
    return out


def test_the_inputs_are_the_ones_the_reference_was_given():
    assert cases.digest(cases.codec_codes()) == MANIFEST["inputs"]["codec_codes"]
    assert cases.digest(cases.voice_audio()) == MANIFEST["inputs"]["voice"]
    codes = cases.codec_codes()
    assert (codes == 0).any() and (codes[-8:, 0] == 0).all()  # zeros, where mlx-audio's decode() would trim


def _peak_relative(a: np.ndarray, b: np.ndarray, peak: float) -> float:
    return float(np.abs(a - b).max() / peak)


@pytest.mark.parametrize(("name", "route"), [("tiny", "narrate"), ("tiny-sharp", "narrate"), ("tiny-sharp", "plain")])
def test_streamed_codec_audio_equals_the_reference(built, name, route):
    """All 240 frames, past the window three times over: equal to the float32 floor. `plain` is the route of a GPU
    (mlx-audio's layers), `narrate` this CPU's (codec_fast's). Frames whose first code is 0 are kept, as the
    reference keeps them."""
    loaded, golden = built[name]
    wav = ours.stream_codec(loaded, cases.codec_codes(), route)
    assert len(wav) == cases.CODEC_FRAMES * cases.SAMPLES_PER_FRAME  # nothing trimmed by code value
    mine = cases.audio_summary(wav)
    peak = float(np.abs(golden["codec_samples"]).max())
    assert len(golden["codec_energy"]) == cases.CODEC_FRAMES  # the reference kept every frame too
    assert _peak_relative(mine["samples"], golden["codec_samples"], peak) < 1e-5
    np.testing.assert_allclose(mine["energy"], golden["codec_energy"], rtol=1e-4)


def test_without_the_window_the_sharp_decoder_departs_from_the_reference_after_frame_72(built):
    """What the window fixes, so that the test above can fail: mlx-audio 0.6.2's decoder as it is equals the
    reference up to frame 72 and is off by per cents of the peak after it."""
    loaded, golden = built["tiny-sharp"]
    wav = ours.stream_codec(loaded, cases.codec_codes(), "unwindowed")
    mine = cases.audio_summary(wav)["samples"]
    peak = float(np.abs(golden["codec_samples"]).max())
    cut = WINDOW * cases.SAMPLES_PER_FRAME // cases.SAMPLE_STRIDE
    assert _peak_relative(mine[:cut], golden["codec_samples"][:cut], peak) < 1e-5
    assert _peak_relative(mine[cut:], golden["codec_samples"][cut:], peak) > 0.01


@pytest.mark.parametrize("penalty", cases.REPETITION_PENALTIES)
def test_greedy_codes_equal_the_reference_alone_and_as_rows_of_a_batch(built, penalty):
    """float32, greedy: the 16 codes of every frame, sentence by sentence alone and all as one batch, cloned with
    the reference's x-vector (so that only the talker and code predictor are compared)."""
    loaded, golden = built["tiny"]
    xvector = golden["xvector"]
    for i, text in enumerate(cases.SENTENCES):
        (alone,) = ours.greedy_codes(loaded, xvector, [text], cases.GREEDY_FRAMES, penalty)
        want = golden[f"codes_p{penalty}_single_{i}"]
        assert want.shape == (cases.GREEDY_FRAMES, 16)
        np.testing.assert_array_equal(alone, want, err_msg=f"sentence {i} alone, penalty {penalty}")
    batch = ours.greedy_codes(loaded, xvector, list(cases.SENTENCES), cases.GREEDY_FRAMES, penalty)
    for i, codes in enumerate(batch):
        np.testing.assert_array_equal(codes, golden[f"codes_p{penalty}_batch_{i}"], err_msg=f"row {i} of the batch")


def test_xvector_equals_the_reference_but_for_the_mel_window(built):
    """mlx-audio's mel uses a symmetric Hann window where the reference's is periodic (docs/models.md): the
    x-vector differs by about 1e-4 of its length, nothing more."""
    loaded, golden = built["tiny"]
    mine = ours.xvector(loaded, cases.voice_audio())
    want = golden["xvector"]
    cosine = float(mine @ want / np.linalg.norm(mine) / np.linalg.norm(want))
    assert cosine > 0.99999
    assert np.linalg.norm(mine - want) / np.linalg.norm(want) < 5e-4
