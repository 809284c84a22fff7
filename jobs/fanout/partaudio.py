"""A fanned-out book's finished sentences on their way from the part jobs to the stitch job, through
Redis (hosts share no disk): FLAC chunks (lossless for the checkpoints' 16-bit samples), a few
sentences each, in one hash per book, with a TTL; the stitch job downloads them into its own
checkpoint store and deletes the hash once the book is written.

Hash ``narrate:part-audio:<book id>``: field = the chunk's sentence indices, comma-joined (so what is
uploaded is known without reading the audio); value = a JSON header line (per sentence: index,
checkpoint key, samples, frames, runaway, takes, sha256 of its samples) then the FLAC bytes.
A part job uploads every few sentences, so a host that dies mid-part loses only what it had not
uploaded yet; the host that takes the part over skips every uploaded sentence."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import redis
from narrate.jobs.book.checkpoints import Checkpoint, CheckpointStore, check_key
from narrate.jobs.errors import NarrateError
from narrate.jobs.ffmpeg import run_ffmpeg
from narrate.jobs.settings import SAMPLE_RATE

log = logging.getLogger("narrate.jobs")
PCM = ["-f", "s16le", "-ar", str(SAMPLE_RATE), "-ac", "1"]
CHUNK_SENTENCES = 4  # a chunk is uploaded once it holds this many sentences...
CHUNK_SAMPLES = 2_000_000  # ...or this much audio (about 83 s, some 2 MB of FLAC)
CHUNK_SECONDS = 5.0  # ...or its first sentence waited this long


def audio_key(book_id: str) -> str:
    return f"narrate:part-audio:{book_id}"


def encode(exe: str, ints: np.ndarray) -> bytes:
    return run_ffmpeg(
        exe,
        [*PCM, "-i", "pipe:0", "-f", "flac", "-compression_level", "5", "pipe:1"],
        stdin=np.asarray(ints, dtype="<i2").tobytes(),
        timeout=600,
    )


def decode(exe: str, flac: bytes) -> np.ndarray:
    return np.frombuffer(
        run_ffmpeg(exe, ["-f", "flac", "-i", "pipe:0", *PCM, "pipe:1"], stdin=flac, timeout=600), dtype="<i2"
    )


def uploaded(r: redis.Redis, book_id: str) -> set[int]:
    """Indices of the sentences whose audio is in Redis (one HKEYS; no audio is read)."""
    fields = cast("list[bytes]", r.hkeys(audio_key(book_id)))  # narrate's clients return bytes (decode_responses off)
    return {int(i) for f in fields for i in f.decode().split(",") if i}


class ServerFull(NarrateError):
    """The server refuses writes: its memory is full (maxmemory with the noeviction policy)."""


@dataclass
class Uploader:
    """Collects finished sentences and sends them as one FLAC chunk every few sentences."""

    r: redis.Redis
    book_id: str
    ffmpeg: str
    keep_s: int  # TTL of the book's audio hash
    pending: list[tuple[int, str, Checkpoint]] = field(default_factory=list)
    since: float = 0.0
    sent_bytes: int = 0
    sent_sentences: int = 0

    def add(self, index: int, key: str, cp: Checkpoint) -> None:
        if not self.pending:
            self.since = time.monotonic()
        self.pending.append((index, key, cp))
        samples = sum(c.pcm.size for _, _, c in self.pending)
        if (
            len(self.pending) >= CHUNK_SENTENCES
            or samples >= CHUNK_SAMPLES
            or (time.monotonic() - self.since >= CHUNK_SECONDS)
        ):
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        head = [
            [i, key, int(cp.pcm.size), cp.frames, cp.runaway, cp.takes, hashlib.sha256(cp.pcm.tobytes()).hexdigest()]
            for i, key, cp in self.pending
        ]
        flac = encode(self.ffmpeg, np.concatenate([cp.pcm for _, _, cp in self.pending]))
        blob = json.dumps({"sentences": head}).encode() + b"\n" + flac
        name = ",".join(str(i) for i, _, _ in self.pending)
        try:
            with self.r.pipeline() as p:
                p.hset(audio_key(self.book_id), name, blob)
                p.expire(audio_key(self.book_id), self.keep_s)
                p.execute()
        except redis.ResponseError as e:  # OutOfMemoryError, or inside MULTI the ExecAbortError it causes
            said = f"{e} {e.__context__ or ''}"
            if not isinstance(e, redis.exceptions.OutOfMemoryError) and "maxmemory" not in said:
                raise
            log.error("book %s: the Redis server is full: %s", self.book_id, e)
            raise ServerFull(
                f"the Redis server is full (its maxmemory is reached and it evicts nothing), so this part's audio "
                f"({len(blob) / 1e6:.1f} MB) could not be stored for the stitch: free memory on the server or raise "
                "its maxmemory (or lower NARRATE_FANOUT_MAX_MB for later books), then `narrate resume` the book"
            ) from None
        self.sent_bytes += len(blob)
        self.sent_sentences += len(self.pending)
        self.pending = []


def download(r: redis.Redis, book_id: str, checkpoints: CheckpointStore, ffmpeg: str) -> int:
    """Write every uploaded sentence into `checkpoints` (under the key its part job used), one chunk
    at a time; a chunk whose samples do not match their checksum is skipped (the stitch job then
    synthesizes those sentences itself). Returns the sentences written."""
    n = 0
    for name, blob in r.hscan_iter(audio_key(book_id), count=8):
        newline = blob.find(b"\n")
        try:
            head = json.loads(blob[:newline])["sentences"]
            samples = decode(ffmpeg, blob[newline + 1 :])
        except (ValueError, KeyError, RuntimeError) as e:
            log.warning("part audio chunk %s of book %s unreadable (%s): synthesized again", name, book_id, e)
            continue
        n += _save_chunk(checkpoints, book_id, name, head, samples)
    return n


def _save_chunk(checkpoints: CheckpointStore, book_id: str, name: bytes, head: list, samples: np.ndarray) -> int:
    """Save one chunk's sentences; a sentence whose entry is malformed (a key checkpoint_key cannot
    have made, sizes that are not counts) or whose samples do not match their checksum is skipped:
    the stitch job synthesizes it itself. Returns the sentences saved."""
    n = at = 0
    for entry in head:
        try:
            index, key, size, frames, runaway, takes, sha = entry
            check_key(key)
            if not all(isinstance(v, int) and v >= 0 for v in (size, frames, takes)):
                raise ValueError(f"sizes {size!r}, {frames!r}, {takes!r}")
        except (TypeError, ValueError) as e:  # BadKey is a ValueError
            log.warning("part audio chunk %s of book %s: a malformed entry (%s): skipped", name, book_id, e)
            return n  # the offsets of the rest are unknown
        ints = samples[at : at + size]
        at += size
        if ints.size != size or hashlib.sha256(ints.tobytes()).hexdigest() != sha:
            log.warning("sentence %s of book %s damaged in transit: synthesized again", index, book_id)
            continue
        if not checkpoints.has(key):
            checkpoints.save_samples(key, ints, frames, bool(runaway), takes)
        n += 1
    return n


def delete(r: redis.Redis, book_id: str) -> None:
    r.delete(audio_key(book_id))
