"""Gapless joins of separately encoded MP3 segments, and the one mux of an mp3 file from them.

At narrate's 24 kHz an MP3 frame (MPEG-2 Layer III) holds one granule of 576 samples, and LAME's encoder delay is
576 samples: frame k of an encode (k >= 0) stands for input samples [576 (k-1), 576 k), its first frame for the
delay before the first sample. A segment of N samples (N a multiple of 576) is encoded alone into raw frames (no
Xing frame, no ID3 tag: ENCODE). In the book, every segment but a piece's last keeps its first N/576 frames: the
frame for the delay, then its samples but its last 576; the next segment's first frame stands for those (as its
encoder delay, zeros) and its first frame starts the next segment's bit reservoir afresh, so no kept frame needs
a byte of a frame left out. That is silent because every cut has at least two frames of its pause before it and
CUT_SILENCE samples after it (jobs/audio/segments.py ``Grid``): the frames at a join encode silence either way
(measured: the largest sample in the silence at a join is the codec's own noise floor there, as in one encode of
the whole; tests/system/test_segmented_mp3.py checks it). A piece's last segment keeps every frame LAME wrote,
the flush with its padding.

The mux copies the frames into an .mp3 (ffmpeg's mp3 muxer writes the Xing "Info" frame: frame count, bytes,
seek table), then writes the LAME tag's encoder delay (576) and padding (the frames' samples past the piece's own)
and its CRC (of the frame's bytes before it, as LAME writes it and ffmpeg's demuxer checks it): decoders (ffmpeg,
mpg123, players that play gaplessly) skip the delay and the padding, so the file decodes to exactly the piece's
samples, as one encode of them does. narrate muxes an mp3 book in one file so; split or in parts it is one
encode each (jobs/audio/stream_encode.py)."""

from __future__ import annotations

from pathlib import Path

from narrate.jobs.errors import NarrateError
from narrate.jobs.ffmpeg import run_ffmpeg
from narrate.jobs.outputs.outputs import FORMATS

FRAME = 576  # samples per frame (MPEG-2 Layer III, 24 kHz)
DELAY = 576  # LAME's encoder delay, in samples: one frame
ENCODE = [*FORMATS[".mp3"][1], "-write_xing", "0", "-id3v2_version", "0", "-f", "mp3"]  # raw frames only
BITRATES = (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160)  # kbit/s, MPEG-2 Layer III
RATES = {0: 22050, 1: 24000, 2: 16000}  # MPEG-2 sampling frequencies by their index
SIDE_INFO = 9  # bytes of side information of an MPEG-2 mono frame: the Xing frame's tag follows it
LAME = 120  # the LAME extension's offset from the Xing tag
CRC_AT = LAME + 34  # the LAME tag's CRC, from the Xing tag: of every byte of the frame before it


def frames(data: bytes, name: str = "") -> list[tuple[int, int]]:
    """(offset, length) of every MPEG-2 Layer III frame of a raw stream (no ID3 tag before it)."""
    spans, pos = [], 0
    while pos < len(data):
        length = _length(data[pos : pos + 4], name, pos)
        spans.append((pos, length))
        pos += length
    if pos != len(data):
        raise NarrateError(f"the encoder wrote a damaged MP3 stream ({name}: its last frame is cut short)")
    return spans


def _length(h: bytes, name: str, pos: int) -> int:
    """The length of the frame whose header is `h` (MPEG-2, Layer III: 72 x bitrate / rate + padding bytes)."""
    if len(h) < 4 or h[0] != 0xFF or (h[1] & 0xFE) != 0xF2 or h[2] >> 4 in (0, 15) or (h[2] >> 2) & 3 == 3:
        raise NarrateError(f"the encoder wrote a damaged MP3 stream ({name} at byte {pos})")
    return 72 * BITRATES[h[2] >> 4] * 1000 // RATES[(h[2] >> 2) & 3] + ((h[2] >> 1) & 1)


def kept(data: bytes, samples: int, last: bool, name: str = "") -> tuple[bytes, int]:
    """The frames of a segment's raw stream `data` that a piece keeps, and how many: `last` (the piece's last
    segment) all of them; else its first samples / 576."""
    spans = frames(data, name)
    content = -(-samples // FRAME)
    if len(spans) < content + 1:
        raise NarrateError(f"the encoder wrote {len(spans)} MP3 frames for {samples} samples; expected {content + 1}")
    if not last and samples % FRAME:
        raise NarrateError(f"an MP3 segment of {samples} samples is not cut on a frame")
    keep = spans if last else spans[: samples // FRAME]
    return data[: keep[-1][0] + keep[-1][1]], len(keep)


def mux(ffmpeg: str, scratch: Path, segments: list[tuple[str, int]], samples: int, out: Path) -> None:
    """`out` (in the scratch directory) from the raw frames of `segments` ((file name, samples) in order, the
    piece's last ending it), decoding to exactly `samples` samples."""
    joined = out.with_name(f".{out.stem}.frames.mp3")
    count = 0
    try:
        with open(joined, "xb") as dst:
            for k, (name, n) in enumerate(segments):
                data, held = kept((scratch / name).read_bytes(), n, last=k == len(segments) - 1, name=name)
                dst.write(data)
                count += held
        run_ffmpeg(
            ffmpeg,
            [
                "-y",
                "-f",
                "mp3",
                "-i",
                joined.name,
                "-c:a",
                "copy",
                "-id3v2_version",
                "0",
                "-write_xing",
                "1",
                "-f",
                "mp3",
                out.name,
            ],
            cwd=scratch,
        )
    finally:
        joined.unlink(missing_ok=True)
    padding = count * FRAME - DELAY - samples
    if not 0 <= padding < 1 << 12:
        raise NarrateError(f"the MP3 frames of {out.name} do not hold its {samples} samples")
    write_delay(out, DELAY, padding)


def write_delay(path: Path, delay: int, padding: int) -> None:
    """Write the encoder delay and padding into the LAME tag of the Xing frame that starts `path`, and its CRC."""
    with open(path, "r+b") as f:
        head = f.read(4)
        frame = bytearray(head + f.read(_length(head, path.name, 0) - 4))
        at = 4 + SIDE_INFO
        if bytes(frame[at : at + 4]) not in (b"Info", b"Xing") or len(frame) < at + CRC_AT + 2:
            raise NarrateError(f"{path.name} has no Xing frame to hold its encoder delay")
        lame, crc = at + LAME, at + CRC_AT
        frame[lame + 21 : lame + 24] = ((delay << 12) | padding).to_bytes(3, "big")
        frame[crc : crc + 2] = crc16(bytes(frame[:crc])).to_bytes(2, "big")
        f.seek(0)
        f.write(frame)


def crc16(data: bytes, crc: int = 0) -> int:
    """CRC-16/ARC (the LAME tag's: polynomial 0x8005, reflected)."""
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc
