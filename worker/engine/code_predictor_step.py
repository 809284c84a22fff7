"""The code predictor's 15 passes of a frame, with their sampling, as one compiled MLX function.

After the talker has sampled a frame's first codebook, mlx-audio's code predictor runs 15 small
passes (a 16-token sequence: the talker's hidden state and the first code, then one code per
pass), each followed by a sampling. Run op by op that is about 15 x 300 MLX operations a frame;
``mx.compile`` traces the whole loop once per shape and fuses its elementwise work, so each frame
is one call. The passes always have the same lengths (2 positions, then 3, ... 16), so the only
shape that varies is the number of rows: rows are padded up to a bucket (powers of two up to the
batch size, and the batch size itself), so a batch of up to N rows needs few compiled shapes (on
a CPU, where a shape costs little, every row count has its own: no padding).
Every operation works row by row (matrix products, attention, the counter-based sampler), so a
padded row never changes a real row's result: a sentence's codes are the same in any bucket.

Compiling costs time per new shape (on a CPU MLX builds its fused kernels once and keeps them
on disk; on MLX-CUDA a new shape costs about a minute and a half of JIT): ``warm_up`` compiles
every bucket a batch size needs before the first job, and says so in the log.

The compiled function computes the same operations as mlx-audio's code predictor in the same
order; on the CPU its codes equal the uncompiled loop's (a test checks it), and either way every
narrate variant (jobs, static and continuous batches, the benchmark) runs this one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import mlx.core as mx
from narrate.worker.engine.sampling import Sampling, sample_rows

log = logging.getLogger("narrate.worker")
STEP_ATTR = "_narrate_code_predictor_step"  # where a model keeps its compiled step


def buckets(size: int, every: bool = False) -> list[int]:
    """The row counts compiled for batches of up to `size` rows: powers of two below it, and it
    (`every`: each count from 1 to `size`, no padding)."""
    if every:
        return list(range(1, max(size, 1) + 1))
    out, b = [], 1
    while b < size:
        out.append(b)
        b *= 2
    return [*out, max(size, 1)]


def bucket(rows: int, size: int, every: bool = False) -> int:
    """The compiled row count that holds `rows` in a batch of at most `size` rows."""
    for b in buckets(max(size, rows), every):
        if b >= rows:
            return b
    return rows  # not reached: buckets(n) ends with n


class _GrowingCache:
    """A KV cache that holds exactly its positions (the predictor's sequence is at most 16 long):
    the same keys and values mlx-audio's KVCache returns, without its 256-position buffers."""

    def __init__(self) -> None:
        self.keys: mx.array | None = None
        self.values: mx.array | None = None
        self.offset = 0

    def update_and_fetch(self, keys: mx.array, values: mx.array) -> tuple[mx.array, mx.array]:
        if self.keys is None or self.values is None:
            self.keys, self.values = keys, values
        else:
            self.keys = mx.concatenate([self.keys, keys], axis=2)
            self.values = mx.concatenate([self.values, values], axis=2)
        self.offset = self.keys.shape[2]
        return self.keys, self.values


class CodePredictorStep:
    """``step(hidden, first, seeds, steps)``: (rows, 15) int32 codes of codebooks 1..15."""

    def __init__(self, model: Any, opts: Sampling):
        self.talker = model.talker
        self.predictor = model.talker.code_predictor
        self.groups = model.config.talker_config.num_code_groups
        self.opts = opts
        self.hidden_size = model.config.talker_config.hidden_size
        self.compiled = mx.compile(self._passes)
        # On a CPU a new shape costs little (MLX keeps its compiled kernels on disk): every row
        # count is compiled, nothing is padded. Elsewhere (MLX-CUDA: minutes of JIT a shape)
        # rows are padded up to powers of two.
        self.every = mx.default_device().type == mx.cpu
        self.shapes: set[tuple[int, Any]] = set()  # (rows, hidden dtype) compiled so far

    def _passes(self, hidden: mx.array, first: mx.array, seeds: mx.array, steps: mx.array) -> mx.array:
        """The uncompiled loop (as decode_loop ran it): hidden (rows, 1, H), first (rows,) int32."""
        predictor = self.predictor
        cache = [_GrowingCache() for _ in predictor.model.layers]
        token = first[:, None]
        x = mx.concatenate([hidden, self.talker.get_input_embeddings()(token)], axis=1)
        codes = []
        for g in range(self.groups - 1):
            if g > 0:
                x = predictor.codec_embedding[g - 1](token)
            logits, cache, _ = predictor(x, cache=cache, generation_step=g)
            token = sample_rows(logits[:, -1, :], seeds, steps, g + 1, self.opts)[:, None].astype(mx.int32)
            codes.append(token)
        return mx.concatenate(codes, axis=1)

    def __call__(self, hidden: mx.array, first: mx.array, seeds: mx.array, steps: mx.array, size: int) -> mx.array:
        """Codes for `hidden`'s rows, computed in the bucket that holds them (padded rows dropped)."""
        n = hidden.shape[0]
        b = self.bucket(n, size)
        if b > n:
            pad = b - n
            hidden = mx.concatenate([hidden, mx.zeros((pad, *hidden.shape[1:]), dtype=hidden.dtype)], axis=0)
            first = mx.concatenate([first, mx.zeros((pad,), dtype=first.dtype)], axis=0)
            seeds = mx.concatenate([seeds, mx.zeros((pad,), dtype=seeds.dtype)], axis=0)
            steps = mx.concatenate([steps, mx.zeros((pad,), dtype=steps.dtype)], axis=0)
        self.shapes.add((b, hidden.dtype))
        codes = self.compiled(hidden, first, seeds, steps)
        return codes[:n] if b > n else codes

    def bucket(self, rows: int, size: int) -> int:
        return bucket(rows, size, self.every)

    def warm_up(self, size: int, dtype: Any, progress: Callable[[], None] | None = None) -> None:
        """Compile every bucket of a batch of up to `size` rows now (not in the middle of a job);
        `progress` is called after each (a worker's liveness beat: a GPU may take minutes)."""
        todo = [b for b in buckets(size, self.every) if (b, dtype) not in self.shapes]
        if not todo:
            return
        log.info("compiling the code predictor step for %s rows (once per shape)", ",".join(map(str, todo)))
        t0 = time.perf_counter()
        for b in todo:
            hidden = mx.zeros((b, 1, self.hidden_size), dtype=dtype)
            zeros = mx.zeros((b,), dtype=mx.uint32)
            mx.eval(self(hidden, mx.zeros((b,), dtype=mx.int32), zeros, zeros, b))
            if progress is not None:
                progress()
        log.info("compiled the code predictor step in %.1f s", time.perf_counter() - t0)


def code_predictor_step(model: Any, opts: Sampling) -> CodePredictorStep:
    """The model's compiled step (one per loaded model and sampling options, kept on the model)."""
    step = getattr(model, STEP_ATTR, None)
    if step is None or step.opts != opts:
        step = CodePredictorStep(model, opts)
        object.__setattr__(model, STEP_ATTR, step)
    return step
