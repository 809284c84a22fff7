"""The identity of a model's weights: it keys cached voice embeddings and sentence checkpoints, so
two different checkpoints must never share one.

- A local checkpoint is identified by its content: the sha256 of every file that affects the audio
  (weights, configs, tokenizer files, the speech tokenizer's), with their relative paths. Two
  fine-tunes with the same layout and file sizes get different keys; the same checkpoint copied
  elsewhere keeps its key. Hashing a multi-GB checkpoint takes seconds, so each file's hash is
  remembered in a small JSON memo by (path, size, mtime_ns, inode) and computed again only when
  one of those changes.
- A hub id is identified by the id and, when it can be found in the local Hugging Face cache, the
  snapshot revision (commit hash) that was loaded: ``org/name@<commit>``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Protocol

log = logging.getLogger("narrate.worker")

# Files of a checkpoint that can change its audio: weights, configs (model, generation, speech
# tokenizer) and text-tokenizer files. Hidden files and folders (a download's .cache/) are skipped.
CONTENT_SUFFIXES = (".safetensors", ".json", ".txt", ".model", ".tiktoken")
KEY_HEX = 24  # hex digits of the content hash kept in the key


def file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def content_files(root: Path) -> list[Path]:
    """The files of a checkpoint directory that affect its audio, in a stable order."""
    return sorted(
        p
        for p in root.rglob("*")
        if p.suffix in CONTENT_SUFFIXES
        and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


class HashMemo:
    """File hashes remembered across processes by (path, size, mtime_ns, inode), in a JSON file
    (None: remembered in this object only). A damaged memo is ignored and rewritten."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self._entries: dict[str, dict] = self._read(path) if path is not None else {}

    @staticmethod
    def _read(path: Path) -> dict[str, dict]:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def sha256(self, path: Path) -> tuple[str, bool]:
        """(the file's sha256, whether it was computed now)."""
        st = path.stat()
        stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}
        entry = self._entries.get(str(path))
        if isinstance(entry, dict) and all(entry.get(k) == v for k, v in stamp.items()) and "sha256" in entry:
            return entry["sha256"], False
        digest = file_sha256(path)
        self._entries[str(path)] = {**stamp, "sha256": digest}
        return digest, True

    def save(self) -> None:
        """Write the memo atomically (temp file + rename), forgetting files that are gone; failing
        to write it is not an error (the hashes are computed again next time)."""
        if self.path is None:
            return
        self._entries = {p: e for p, e in self._entries.items() if os.path.exists(p)}
        tmp = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump(self._entries, f, indent=0)
            os.replace(tmp, self.path)
        except OSError as e:
            log.warning("could not save the weights hash memo %s: %s", self.path, e)
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def local_key(root: Path, memo: HashMemo | None = None) -> str:
    """``local-<hash>`` of the checkpoint's content (see the module docstring)."""
    memo = memo if memo is not None else HashMemo()
    root = Path(root).resolve()
    h = hashlib.sha256()
    computed = 0
    for f in content_files(root):
        digest, fresh = memo.sha256(f)
        computed += fresh
        h.update(f"{f.relative_to(root).as_posix()}\0{digest}\n".encode())
    if computed:
        log.info("hashed %d checkpoint file(s) of %s", computed, root)
        memo.save()
    return f"local-{h.hexdigest()[:KEY_HEX]}"


def hub_revision(repo_id: str, hub_cache: Path | None = None) -> str | None:
    """The commit hash of the repo's cached snapshot (what a load without a revision uses), or
    None when the local Hugging Face cache does not have it."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(repo_id, "config.json", cache_dir=hub_cache)
    except Exception:  # noqa: BLE001 - an unreadable cache: fall back to the bare id
        return None
    if not isinstance(found, str):
        return None
    return Path(found).parent.name  # .../snapshots/<commit>/config.json


class ResolvedModel(Protocol):
    """What the key reads of a resolved model (models.Resolved; models.py imports this module)."""

    @property
    def source(self) -> str: ...  # a hub id or an absolute local path

    @property
    def local(self) -> bool: ...


def model_key(resolved: ResolvedModel, memo: HashMemo | None = None, hub_cache: Path | None = None) -> str:
    """The key of a resolved model."""
    if resolved.local:
        return local_key(Path(resolved.source), memo)
    revision = hub_revision(resolved.source, hub_cache)
    return f"{resolved.source}@{revision}" if revision else resolved.source
