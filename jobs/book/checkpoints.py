"""Sentence checkpoints: each finished sentence's audio is written atomically to a file named by
the hash of everything that determines it (text, voice, model, quantization, seed, budget), so
a retried, requeued or resubmitted job redoes only what is missing. The body's checksum is kept
in the header: a damaged checkpoint counts as missing and is redone, never stitched in. With the proof
pass (jobs/proof) the header also keeps the verdicts of the sentence's takes, so a resumed job does not
hear a sentence again; with word timings (jobs/readalong/aligning.py) its words' times, so it does not align it
again. Checkpoints
outlive their job as a size-capped cache (jobs.book.cache): every hit sets the file's modification time,
the cache's "last used"."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # loaded where audio is read or written (`narrate status` and friends need none)
    import numpy as np

# Format: MAGIC, a JSON header line, then the body (int16 little-endian samples). The header
# holds the sha256 of the body, so a damaged body is found and the sentence synthesized again.
# Files in the first format (NRS1, no checksum) count as missing.
MAGIC = b"NRS2\n"
RECREATE_TRIES = 100  # a shard folder removed under a writer is made again this many times at most


@dataclass(frozen=True)
class Checkpoint:
    pcm: np.ndarray  # int16 samples at 24 kHz
    frames: int
    runaway: bool
    takes: int  # syntheses of this sentence: 2 when a runaway was synthesized again
    proof: dict | None = None  # the proof pass's record of its takes (jobs/proof/takes.py), once it was heard
    words: dict | None = None  # its words' times (jobs/readalong/aligning.py record), once they were aligned


def checkpoint_key(text: str, voice: str, model: str, quant: str, seed: int, budget: int) -> str:
    blob = json.dumps([text, voice, model, quant, seed, budget], ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()


def _header(head: bytes) -> dict | None:
    """The header of a checkpoint from its first bytes (MAGIC + JSON line), or None."""
    if not head.startswith(MAGIC):
        return None
    try:
        meta = json.loads(head[len(MAGIC) :])
    except ValueError:
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("samples"), int) or "sha256" not in meta:
        return None
    return meta


KEY = re.compile(r"[0-9a-f]{64}")  # what checkpoint_key makes: a sha256, hex


class BadKey(ValueError):
    """A checkpoint key that checkpoint_key cannot have made (it came from outside: Redis, a file)."""


def check_key(key: object) -> str:
    """The key, if it is one checkpoint_key makes; a key is joined to a path, so anything else (a
    `/`, `..`, another length) is refused here, where it becomes one."""
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise BadKey(f"not a checkpoint key: {key!r:.80}")
    return key


class CheckpointStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, key: str) -> Path:
        check_key(key)
        return self.root / key[:2] / f"{key}.seg"

    def has(self, key: str) -> bool:
        """A complete checkpoint exists (header and length checked; the samples are not read)."""
        return self.header(key) is not None

    def header(self, key: str) -> dict | None:
        """The header of a complete checkpoint (samples, frames, runaway, takes, sha256; header and
        length checked, the samples not read), or None."""
        path = self.path(key)
        try:
            with open(path, "rb") as f:
                head = f.readline() + f.readline()
                size = os.fstat(f.fileno()).st_size
        except OSError:
            return None
        meta = _header(head)
        return meta if meta is not None and size == len(head) + 2 * meta["samples"] else None

    def verify(self, key: str) -> bool:
        """A complete, undamaged checkpoint exists: the body is read and its checksum checked."""
        return self.samples(key) is not None

    def samples(self, key: str) -> int | None:
        """The samples of a complete, undamaged checkpoint (as ``verify`` checks it), or None."""
        cp = self.load(key)
        return None if cp is None else int(cp.pcm.size)

    def load(self, key: str) -> Checkpoint | None:
        """The checkpoint, or None if it is missing or damaged (a damaged one is redone)."""
        try:
            raw = self.path(key).read_bytes()
        except OSError:
            return None
        first = raw.find(b"\n", len(MAGIC))
        if first < 0:
            return None
        meta = _header(raw[: first + 1])
        body = raw[first + 1 :]
        if meta is None or len(body) != 2 * meta["samples"] or hashlib.sha256(body).hexdigest() != meta["sha256"]:
            return None
        import numpy as np

        pcm = np.frombuffer(body, dtype="<i2")
        self.touch(key)
        return Checkpoint(
            pcm, int(meta["frames"]), bool(meta["runaway"]), int(meta["takes"]), meta.get("proof"), meta.get("words")
        )

    def save(self, key: str, pcm: np.ndarray, frames: int, runaway: bool, takes: int) -> None:
        """Write atomically: a temp file in the same directory, fsync, rename."""
        self.save_samples(key, int16(pcm), frames, runaway, takes)

    def save_samples(self, key: str, ints: np.ndarray, frames: int, runaway: bool, takes: int) -> None:
        """`save` for samples already stored as int16 (a checkpoint that came from another host)."""
        self._write(key, ints, {"frames": frames, "runaway": runaway, "takes": takes})

    def record_proof(self, key: str, proof: dict, take: Checkpoint | None = None) -> bool:
        """Keep the proof pass's record in the checkpoint's header, with `take` (its int16 samples, frames,
        runaway, takes) as its audio instead of the one it has, if given. False: the checkpoint is gone
        (without `take`). Word timings it kept stay (they name the take they are of)."""
        words = (self.header(key) or {}).get("words")
        if take is None:
            take = self.load(key)
            if take is None:
                return False
        fields = {"frames": take.frames, "runaway": take.runaway, "takes": take.takes, "proof": proof}
        self._write(key, take.pcm, {**fields, **({"words": words} if words else {})})
        return True

    def record_words(self, key: str, words: dict, sha256: str) -> bool:
        """Keep a sentence's word timings (jobs/readalong/aligning.py ``record``) in its checkpoint's header, the
        rest as it is. False: the checkpoint is gone, or it holds another take than the one aligned (`sha256`)."""
        cp = self.load(key)
        if cp is None or hashlib.sha256(cp.pcm.tobytes()).hexdigest() != sha256:
            return False
        fields = {"frames": cp.frames, "runaway": cp.runaway, "takes": cp.takes, "words": words}
        self._write(key, cp.pcm, {**fields, **({"proof": cp.proof} if cp.proof is not None else {})})
        return True

    def _write(self, key: str, ints: np.ndarray, fields: dict) -> None:
        import numpy as np

        ints = np.asarray(ints, dtype="<i2")
        body = ints.tobytes()
        meta = {"samples": int(ints.size), **fields, "sha256": hashlib.sha256(body).hexdigest()}
        final = self.path(key)
        fd, tmp = _temp_file(final.parent, prefix=f".{key[:16]}.")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + json.dumps(meta).encode() + b"\n")
                f.write(body)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def touch(self, key: str) -> None:
        """Mark a checkpoint used now (the cache evicts the least recently used first)."""
        with contextlib.suppress(OSError):
            os.utime(self.path(key))

    def discard(self, keys: list[str]) -> None:
        """Remove the checkpoints, then each shard folder they leave empty."""
        folders = set()
        for key in keys:
            path = self.path(key)
            folders.add(path.parent)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        for folder in folders:
            _remove_if_empty(folder)

    def sweep_temp(self) -> int:
        """Remove temp files a killed writer left behind (returns how many) and empty shard folders."""
        n = 0
        if self.root.exists():
            for tmp in self.root.glob("*/.*.tmp"):
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
                    n += 1
            for folder in self.root.iterdir():  # and empty shard folders (older versions left them)
                if folder.is_dir() and not folder.is_symlink():
                    _remove_if_empty(folder)
        return n


def int16(pcm: np.ndarray) -> np.ndarray:
    """Float samples as a checkpoint stores them (int16, clipped and rounded)."""
    import numpy as np

    return np.round(np.clip(np.asarray(pcm, dtype=np.float32), -1.0, 1.0) * 32767.0).astype("<i2")


def _temp_file(folder: Path, prefix: str) -> tuple[int, str]:
    """A temp file in `folder`, made if missing. A discard may remove the folder (empty) between
    our mkdir and our temp file: then make it again. Once the temp file is in it, it stays."""
    tries = 0
    while True:
        # FileExistsError: mkdir found it, but it was removed before exist_ok's check; try again
        with contextlib.suppress(FileExistsError):
            folder.mkdir(parents=True, exist_ok=True)
        try:
            return tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
        except FileNotFoundError:
            tries += 1
            if tries >= RECREATE_TRIES:
                raise


def _remove_if_empty(folder: Path) -> None:
    """rmdir: it fails harmlessly when a writer has put a file there meanwhile (or it is gone)."""
    with contextlib.suppress(OSError):
        folder.rmdir()
