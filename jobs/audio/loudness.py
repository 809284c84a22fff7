"""Loudness of a book measured while it streams past, without holding it in memory.

BS.1770-4 integrated loudness (the K-weighting filters are pyloudnorm's, so the figure is the one
pyloudnorm gives for the whole signal): the stream is K-weighted chunk by chunk with the filter
state carried across chunks, and the energy of every 100 ms sub-block is kept (36,000 floats per
hour of audio). The 400 ms gating blocks with 75 % overlap are sums of four consecutive
sub-blocks, so the gated measurement is exact, not an approximation. True peak is estimated per
chunk by 4x oversampling (BS.1770 annex 2)."""

from __future__ import annotations

import math
from typing import cast

import numpy as np

BLOCK_S = 0.4
SUB = 4  # sub-blocks per gating block (75 % overlap)
ABSOLUTE_GATE = -70.0
RELATIVE_GATE = -10.0


def _k_weighting(rate: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
    from pyloudnorm.iirfilter import IIRfilter  # with scipy: 1.5 s of CPU to import, so when a book is measured

    stages = [
        IIRfilter(4.0, 1 / np.sqrt(2), 1500.0, rate, "high_shelf"),
        IIRfilter(0.0, 0.5, 38.0, rate, "high_pass"),
    ]
    return [(np.asarray(f.b, dtype=np.float64), np.asarray(f.a, dtype=np.float64), f.passband_gain) for f in stages]


class LoudnessMeter:
    """``meter.feed(chunk)`` for every piece of the stream in order, then ``meter.integrated()``.
    Samples are floats in [-1, 1]."""

    def __init__(self, rate: int):
        self.rate = rate
        self.sub_len = int(round(BLOCK_S * rate / SUB))
        import scipy.signal  # imported when a book is measured, not by every process that could measure one

        self._filters = _k_weighting(rate)
        self._state = [scipy.signal.lfilter_zi(b, a) * 0.0 for b, a, _ in self._filters]
        self._energies: list[float] = []  # sum of squares of each complete sub-block
        self._partial = 0.0
        self._partial_len = 0
        self.samples = 0
        self.peak = 0.0  # true peak (linear)

    def feed(self, x: np.ndarray) -> None:
        import scipy.signal

        x = np.asarray(x, dtype=np.float64)
        if x.size == 0:
            return
        self.samples += x.size
        self.peak = max(self.peak, true_peak(x))
        y = x
        for i, (b, a, gain) in enumerate(self._filters):
            y, self._state[i] = scipy.signal.lfilter(b, a, y, zi=self._state[i])
            y = y * gain
        sq = np.square(y)
        pos = 0
        if self._partial_len:
            take = min(self.sub_len - self._partial_len, sq.size)
            self._partial += float(sq[:take].sum())
            self._partial_len += take
            pos = take
            if self._partial_len == self.sub_len:
                self._energies.append(self._partial)
                self._partial, self._partial_len = 0.0, 0
        whole = (sq.size - pos) // self.sub_len
        if whole:
            blocks = sq[pos : pos + whole * self.sub_len].reshape(whole, self.sub_len).sum(axis=1)
            self._energies.extend(blocks.tolist())
            pos += whole * self.sub_len
        if pos < sq.size:
            self._partial += float(sq[pos:].sum())
            self._partial_len += sq.size - pos

    def integrated(self) -> float:
        """Integrated loudness in LUFS (-inf for silence or a stream shorter than one block)."""
        e = np.asarray(self._energies, dtype=np.float64)
        n_blocks = int(np.round((self.samples / self.rate - BLOCK_S) / (BLOCK_S / SUB))) + 1
        n_blocks = min(n_blocks, e.size - SUB + 1)
        if n_blocks <= 0:
            return -math.inf
        c = np.concatenate([[0.0], np.cumsum(e)])
        z = (c[SUB : SUB + n_blocks] - c[:n_blocks]) / (self.sub_len * SUB)
        with np.errstate(divide="ignore"):
            lj = -0.691 + 10.0 * np.log10(z)
        above = z[lj >= ABSOLUTE_GATE]
        if above.size == 0:
            return -math.inf
        relative = -0.691 + 10.0 * np.log10(above.mean()) + RELATIVE_GATE
        gated = z[(lj > relative) & (lj > ABSOLUTE_GATE)]
        return -0.691 + 10.0 * math.log10(gated.mean()) if gated.size else -math.inf


def true_peak(x: np.ndarray) -> float:
    """The largest absolute value of `x` oversampled 4x (linear)."""
    import scipy.signal

    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return 0.0
    up = scipy.signal.resample_poly(x, 4, 1)
    return float(max(np.abs(up).max(), np.abs(x).max()))


def gain_for(measured_lufs: float, target_lufs: float) -> float:
    """The linear gain that brings `measured` to `target` (1.0 for silence)."""
    if not math.isfinite(measured_lufs):
        return 1.0
    return cast(float, 10.0 ** ((target_lufs - measured_lufs) / 20.0))  # typeshed: float ** float may be complex
