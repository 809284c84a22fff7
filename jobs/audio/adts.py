"""Gapless joins of separately encoded AAC segments, and the one mux into MP4 (m4a/m4b).

ffmpeg's AAC encoder writes, for N input samples (N a multiple of 1024), N/1024 + 1 frames: the
first decodes to 1024 samples of encoder delay ("priming"), frame k (k >= 1) to input samples
[1024 (k-1), 1024 k). A segment's raw ADTS stream is trimmed to exactly its samples: the first
segment keeps its priming frame, every later one drops it, and every segment but the book's last
drops the frames after its last sample. Joined end to end the frames then decode to the priming
frame plus exactly the book's samples (the last frame padded with up to 1023 samples of silence).
Dropping a priming frame leaves the next frame without its overlap partner; that is silent because
every cut has CUT_SILENCE samples of silence after it (jobs/audio/segments.py), so a join decodes like
the same place of a single encode (measured: the largest sample near a join is the codec's own
noise floor there, ~0.002; tests/system/test_segmented_encode.py checks it).

The mux copies the frames into MP4: a stream starting with the priming frame gets an edit list that
skips it (its timestamps start 1024 samples early: ``-itsoffset``); a piece that starts at a later
segment has no priming frame and needs none."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from narrate.jobs.errors import NarrateError
from narrate.jobs.settings import SAMPLE_RATE

FRAME = 1024
HEADER = 7


def frames(path: Path) -> Iterator[tuple[int, int]]:
    """(offset, length) of every ADTS frame in the file."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        pos = 0
        while pos < size:
            f.seek(pos)
            h = f.read(HEADER)
            if len(h) < HEADER or h[0] != 0xFF or (h[1] & 0xF6) != 0xF0:
                raise NarrateError(f"the encoder wrote a damaged AAC stream ({path.name} at byte {pos})")
            length = ((h[3] & 0x03) << 11) | (h[4] << 3) | (h[5] >> 5)
            if length < HEADER:
                raise NarrateError(f"the encoder wrote a damaged AAC stream ({path.name} at byte {pos})")
            yield pos, length
            pos += length


def trim(raw: Path, out: Path, samples: int, first: bool, last: bool) -> None:
    """Copy the frames of `raw` (one segment of `samples` samples) that the joined book keeps."""
    spans = list(frames(raw))
    content = -(-samples // FRAME)
    if len(spans) < content + 1:
        raise NarrateError(f"the encoder wrote {len(spans)} AAC frames for {samples} samples; expected {content + 1}")
    keep = spans[(0 if first else 1) : None if last else content + 1]
    start = keep[0][0]
    end = keep[-1][0] + keep[-1][1]
    with open(raw, "rb") as src, open(out, "xb") as dst:
        src.seek(start)
        left = end - start
        while left:
            block = src.read(min(left, 1 << 20))
            if not block:
                raise NarrateError(f"{raw.name} ended early")
            dst.write(block)
            left -= len(block)
    os.unlink(raw)


def mux_args(names: list[str], primed: bool) -> list[str]:
    """ffmpeg input arguments reading the trimmed segment files `names` (relative to the scratch
    directory, its working directory) as one stream; `primed`: it starts with the priming frame."""
    shift = ["-itsoffset", f"-{FRAME / SAMPLE_RATE:.9f}"] if primed else []
    return [*shift, "-f", "aac", "-i", "concat:" + "|".join(names)]
